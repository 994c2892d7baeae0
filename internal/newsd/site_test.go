package newsd

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// A site that cannot start (its address is taken) says why and releases
// what it had opened: the site's database is free to open again. Start
// used to release through its nil result and panic.
func TestStartThatFailsSaysWhy(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	o := DefaultOptions()
	o.Data, o.Listen = t.TempDir(), taken.Addr().String()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := Start(context.Background(), o, log); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Start on a taken address: %v, want the listener's error", err)
	}
	taken.Close()
	s, err := Start(context.Background(), o, log)
	if err != nil {
		t.Fatalf("Start again, once the address is free: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
