package proc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests run this test binary as the child: with PROC_HELPER set,
// TestMain plays a small daemon instead of running the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("PROC_HELPER"); mode != "" {
		os.Exit(helper(mode, os.Args[len(os.Args)-1]))
	}
	os.Exit(m.Run())
}

// helper is the child. "daemon" counts its starts in the file data (so a
// restart shows it kept its data folder), listens on 127.0.0.1, says so on
// stdout and logs to stderr, and exits 0 on SIGTERM. "stubborn" ignores
// SIGTERM. "quit" prints one line and exits 3.
func helper(mode, data string) int {
	switch mode {
	case "quit":
		fmt.Println("bye")
		return 3
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ignoring SIGTERM")
		select {}
	}
	b, _ := os.ReadFile(data)
	b = append(b, 'x')
	if err := os.WriteFile(data, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fmt.Fprintf(os.Stderr, "helper: a log line on stderr\n")
	fmt.Printf("%s\nstart %d\nlistening on %s\n", strings.Repeat("long ", 20000), len(b), ln.Addr())
	<-term
	fmt.Println("stopped")
	return 0
}

func helperConfig(t *testing.T, mode string) Config {
	dir := t.TempDir()
	return Config{Binary: os.Args[0], Args: []string{"-test.run=^$", filepath.Join(dir, "data")},
		Env: []string{"PROC_HELPER=" + mode}, Log: filepath.Join(dir, "log"), Name: "helper " + mode}
}

// TestKillAndRestart starts a daemon, waits for its line and port, kills
// it with SIGKILL and starts it again on the same data folder, and stops
// it with SIGTERM.
func TestKillAndRestart(t *testing.T) {
	p := New(helperConfig(t, "daemon"))
	defer p.Kill()
	for start := 1; start <= 2; start++ {
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := p.WaitLine("listening on ", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.WaitPort(strings.TrimPrefix(line, "listening on "), 10*time.Second); err != nil {
			t.Fatal(err)
		}
		// The line too long to keep is not kept; the others are, in order.
		if got, want := p.Lines(), []string{fmt.Sprintf("start %d", start), line}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("start %d: lines %q, want %q", start, got, want)
		}
		if err := p.Start(); err == nil || !strings.Contains(err.Error(), "is running") {
			t.Fatalf("a second start while running: %v", err)
		}
		if start == 1 {
			if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
			if p.Running() {
				t.Fatal("running after Kill")
			}
			if err := p.Wait(time.Second); err == nil || errors.Is(err, ErrRunning) {
				t.Fatalf("after SIGKILL, Wait returned %v, want the signal", err)
			}
		}
	}
	if err := p.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, err := p.WaitLine("stopped", time.Second); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(p.Log())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"==== start 1: ", "==== start 2: ", "helper: a log line on stderr", "start 2\n", "stopped\n"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the log lacks %q", want)
		}
	}
}

// TestWaitsFailClearly: a line that never comes, a process that exits
// first, a port never opened, and a process that ignores SIGTERM.
func TestWaitsFailClearly(t *testing.T) {
	quit, err := Start(helperConfig(t, "quit"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = quit.WaitLine("listening on", 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "helper quit exited (exit status 3) before line starting \"listening on\"") || !strings.HasSuffix(err.Error(), "bye") {
		t.Errorf("waiting on a process that exits: %v", err)
	}
	if err := quit.WaitPort("127.0.0.1:1", 10*time.Second); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("waiting for the port of a process that exited: %v", err)
	}

	stubborn, err := Start(helperConfig(t, "stubborn"))
	if err != nil {
		t.Fatal(err)
	}
	defer stubborn.Kill()
	if _, err := stubborn.WaitLine("ignoring", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	_, err = stubborn.WaitLine("never", 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), `helper stubborn: no line starting "never" within 50ms`) || !strings.HasSuffix(err.Error(), "ignoring SIGTERM") {
		t.Errorf("a line that never comes: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := ln.Addr().String()
	ln.Close()
	if err := stubborn.WaitPort(closedAddr, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "nothing listening on "+closedAddr) {
		t.Errorf("a port never opened: %v", err)
	}
	if err := stubborn.Wait(10 * time.Millisecond); !errors.Is(err, ErrRunning) {
		t.Errorf("Wait on a running process: %v", err)
	}
	if err := stubborn.Stop(syscall.SIGTERM, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "killed") || stubborn.Running() {
		t.Errorf("stopping a process that ignores SIGTERM: %v", err)
	}
}
