package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// MaxKeptBytes bounds the stdout an incarnation keeps in memory for
// WaitLine, WaitOutput and Lines; later lines go to the log only.
const MaxKeptBytes = 1 << 20

// maxLineBytes is the longest stdout line kept; a longer one goes to the
// log only.
const maxLineBytes = 64 << 10

// killWait bounds the wait for a process to exit after SIGKILL.
const killWait = 10 * time.Second

// tailLines is how many of the log's last lines an error shows.
const tailLines = 30

// ErrRunning is wrapped by Wait's error when the process is still running
// at the timeout.
var ErrRunning = errors.New("proc: still running")

// Config is the command a Proc runs at every start.
type Config struct {
	Binary string   // the triad executable
	Args   []string // its arguments, the same at every start
	// Env is added to this process's environment ("GOMAXPROCS=1"); nil
	// adds nothing.
	Env []string
	// Log is the file every incarnation's stdout and stderr are appended
	// to, created if missing. Required.
	Log string
	// Name names the process in errors; empty means the binary's base
	// name and the first argument ("triad node").
	Name string
}

// A Proc is one command run as a child process, over and over: Start runs
// it, Kill ends it with SIGKILL, and Start again runs the same command
// line as a new incarnation. Its methods may be called from any
// goroutine.
type Proc struct {
	cfg  Config
	name string

	mu      sync.Mutex
	cmd     *exec.Cmd     // the current incarnation; nil before the first start
	starts  int           // incarnations started
	done    chan struct{} // closed once cmd has exited and its output is read
	exitErr error         // how cmd ended, once done
	lines   []string      // its stdout lines, up to MaxKeptBytes
	kept    int           // bytes in lines
	more    chan struct{} // closed, and replaced, when a line is kept
}

// New returns a Proc for cfg, not started.
func New(cfg Config) *Proc {
	name := cfg.Name
	if name == "" {
		name = filepath.Base(cfg.Binary)
		if len(cfg.Args) > 0 {
			name += " " + cfg.Args[0]
		}
	}
	return &Proc{cfg: cfg, name: name}
}

// Start starts New(cfg).
func Start(cfg Config) (*Proc, error) {
	p := New(cfg)
	return p, p.Start()
}

// Start starts an incarnation: the first, or the next once the last has
// exited (a reboot after Kill: same arguments, same data folder). It
// marks the start in the log.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg.Binary == "" || p.cfg.Log == "" {
		return fmt.Errorf("proc: %s: a binary and a log file are required", p.name)
	}
	if p.cmd != nil && !closed(p.done) {
		return fmt.Errorf("proc: %s (pid %d) is running", p.name, p.cmd.Process.Pid)
	}
	log, err := os.OpenFile(p.cfg.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("proc: %s: %w", p.name, err)
	}
	if _, err := fmt.Fprintf(log, "==== start %d: %s %s\n", p.starts+1, p.cfg.Binary, strings.Join(p.cfg.Args, " ")); err != nil {
		log.Close()
		return fmt.Errorf("proc: %s: %w", p.name, err)
	}
	cmd := exec.Command(p.cfg.Binary, p.cfg.Args...)
	if p.cfg.Env != nil {
		cmd.Env = append(os.Environ(), p.cfg.Env...)
	}
	tieToParent(cmd)
	cmd.Stderr = log
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		log.Close()
		return fmt.Errorf("proc: starting %s: %w", p.name, err)
	}
	p.starts++
	p.cmd, p.done, p.exitErr = cmd, make(chan struct{}), nil
	p.lines, p.kept, p.more = nil, 0, make(chan struct{})
	go p.read(cmd, out, log, p.done)
	return nil
}

// read copies cmd's stdout to the log, keeping its lines, then waits for
// cmd's exit and notes it.
func (p *Proc) read(cmd *exec.Cmd, out io.Reader, log *os.File, done chan struct{}) {
	r := bufio.NewReaderSize(out, maxLineBytes)
	var werr error
	long := false // within a line too long to keep
	for {
		line, err := r.ReadSlice('\n')
		if _, e := log.Write(line); e != nil && werr == nil {
			werr = e
		}
		complete := err == nil || (err == io.EOF && len(line) > 0)
		if complete && !long {
			p.keep(strings.TrimRight(string(line), "\r\n"))
		}
		long = err == bufio.ErrBufferFull
		if err != nil && err != bufio.ErrBufferFull {
			break
		}
	}
	err := cmd.Wait()
	if werr != nil {
		err = errors.Join(err, fmt.Errorf("writing the log: %w", werr))
	}
	log.Close()
	p.mu.Lock()
	p.exitErr = err
	p.mu.Unlock()
	close(done)
}

func (p *Proc) keep(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.kept+len(line) <= MaxKeptBytes {
		p.lines = append(p.lines, line)
		p.kept += len(line)
	}
	close(p.more)
	p.more = make(chan struct{})
}

// Name is the process's name in errors.
func (p *Proc) Name() string { return p.name }

// Log is the path of the log file.
func (p *Proc) Log() string { return p.cfg.Log }

// Pid is the current incarnation's process ID; 0 before the first start.
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Running reports whether an incarnation is running.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !closed(p.done)
}

// Lines returns the stdout lines the current (or last) incarnation has
// printed so far, up to MaxKeptBytes.
func (p *Proc) Lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lines)
}

// WaitOutput waits until match, given the stdout lines the current
// incarnation has printed so far, returns true, and returns those lines.
// It fails if the process exits first or after timeout, naming what.
func (p *Proc) WaitOutput(what string, timeout time.Duration, match func(lines []string) bool) ([]string, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		p.mu.Lock()
		lines, more, done := p.lines, p.more, p.done
		p.mu.Unlock()
		if done == nil {
			return nil, fmt.Errorf("proc: %s: waiting for %s, but it was never started", p.name, what)
		}
		if match(lines[:len(lines):len(lines)]) {
			return slices.Clone(lines), nil
		}
		select {
		case <-more:
		case <-done:
			p.mu.Lock()
			lines, err := p.lines, p.exitErr // every line is in by now
			p.mu.Unlock()
			if match(lines[:len(lines):len(lines)]) {
				return slices.Clone(lines), nil
			}
			return nil, fmt.Errorf("proc: %s exited (%v) before %s\n%s", p.name, err, what, p.Tail(tailLines))
		case <-timer.C:
			return nil, fmt.Errorf("proc: %s: no %s within %v\n%s", p.name, what, timeout, p.Tail(tailLines))
		}
	}
}

// WaitLine waits up to timeout for a stdout line of the current
// incarnation that starts with prefix, and returns the first.
func (p *Proc) WaitLine(prefix string, timeout time.Duration) (string, error) {
	var found string
	_, err := p.WaitOutput(fmt.Sprintf("line starting %q", prefix), timeout, func(lines []string) bool {
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, prefix) })
		if i >= 0 {
			found = lines[i]
		}
		return i >= 0
	})
	return found, err
}

// WaitPort waits up to timeout until something accepts TCP connections
// on addr, failing at once if the process exits.
func (p *Proc) WaitPort(addr string, timeout time.Duration) error {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return fmt.Errorf("proc: %s: waiting for %s, but it was never started", p.name, addr)
	}
	deadline := time.Now().Add(timeout)
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, max(time.Millisecond, min(time.Second, time.Until(deadline))))
		if err == nil {
			return c.Close()
		}
		if closed(done) {
			return fmt.Errorf("proc: %s exited (%v) before listening on %s\n%s", p.name, p.exitError(), addr, p.Tail(tailLines))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("proc: %s: nothing listening on %s after %v (%v)\n%s", p.name, addr, timeout, err, p.Tail(tailLines))
		}
		select {
		case <-done:
		case <-time.After(pause):
		}
	}
}

func (p *Proc) exitError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Signal sends sig to the running incarnation; it does nothing if none
// runs.
func (p *Proc) Signal(sig os.Signal) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || closed(done) {
		return nil
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("proc: signalling %s: %w", p.name, err)
	}
	return nil
}

// Wait waits up to timeout for the current incarnation to exit and
// returns how it ended (nil: exit status 0). If it still runs then, the
// error wraps ErrRunning.
func (p *Proc) Wait(timeout time.Duration) error {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return nil
	}
	if closed(done) {
		return p.exitError()
	}
	select {
	case <-done:
		return p.exitError()
	case <-time.After(timeout):
		return fmt.Errorf("%w: %s after %v", ErrRunning, p.name, timeout)
	}
}

// Kill sends SIGKILL, as a crash, and waits for the exit; it does nothing
// if no incarnation runs.
func (p *Proc) Kill() error {
	if err := p.Signal(os.Kill); err != nil {
		return err
	}
	if err := p.Wait(killWait); errors.Is(err, ErrRunning) {
		return fmt.Errorf("proc: %s (pid %d) did not exit within %v of SIGKILL", p.name, p.Pid(), killWait)
	}
	return nil
}

// Stop sends sig and waits up to grace for the exit, and returns how the
// process ended; one still running then is killed with SIGKILL, and that
// is an error.
func (p *Proc) Stop(sig os.Signal, grace time.Duration) error {
	if err := p.Signal(sig); err != nil {
		return err
	}
	err := p.Wait(grace)
	if !errors.Is(err, ErrRunning) {
		return err
	}
	if kerr := p.Kill(); kerr != nil {
		return kerr
	}
	return fmt.Errorf("proc: %s did not exit within %v of %v: killed", p.name, grace, sig)
}

// Tail returns the log's last n lines (of its last 64 KiB at most), for
// error messages.
func (p *Proc) Tail(n int) string {
	f, err := os.Open(p.cfg.Log)
	if err != nil {
		return fmt.Sprintf("(log: %v)", err)
	}
	defer f.Close()
	const most = 64 << 10
	var start int64
	if st, err := f.Stat(); err == nil && st.Size() > most {
		start = st.Size() - most
	}
	b, err := io.ReadAll(io.NewSectionReader(f, start, most))
	if err != nil {
		return fmt.Sprintf("(log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
