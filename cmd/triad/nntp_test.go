package main

import (
	"flag"
	"testing"

	"triad/internal/newsd"
)

// TestMemoryLimitIsOnTopOfTheCache: a site on the DHT holds its article
// cache on purpose, so the soft memory limit leaves room for it (a limit
// under a full cache had the collector run without end).
func TestMemoryLimitIsOnTopOfTheCache(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--node", "127.0.0.1:4001"}, 256 + 256},
		{[]string{"--node", "127.0.0.1:4001", "--cache-mb", "1024", "--memory-limit-mb", "100"}, 1124},
		{nil, 256}, // a local spool has no cache
		{[]string{"--node", "127.0.0.1:4001", "--memory-limit-mb", "0"}, 0},
	} {
		fs := flag.NewFlagSet("nntp", flag.ContinueOnError)
		o := newsd.DefaultOptions()
		o.RegisterFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if got := o.GoMemoryLimitMB(); got != tc.want {
			t.Errorf("%v: memory limit %d MiB, want %d", tc.args, got, tc.want)
		}
	}
}
