package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"triad/internal/id"
	"triad/internal/proc"
	"triad/internal/wire"
)

// PinConfig is one run of the memory-pinning scenario (issue 44, rows 9
// and 10): two real `triad node` processes; the first is attacked from
// its own machine (127.0.0.1), which the node used to trust with more
// memory, by clients that pin memory without breaking a rule:
//
//   - frames: Frames connections each send all but the last byte of a
//     frame of the largest size (wire.MaxFrameBytes) and wait;
//   - replies: Readers connections each ask Gets times for a block of
//     BlockBytes and never read an answer.
//
// Each attack runs on a freshly started node, for Hold; meanwhile the
// node's resident memory is sampled, an operator's `triad ring` is timed
// every second, and a `triad get` of the block is timed. It passes when
// the anonymous memory's peak (heap and stacks, what an attacker can pin;
// the stores' mapped pages are the kernel's to reclaim) stays under
// MaxAnonMB and every ring answers within RingLimit.
type PinConfig struct {
	Binary     string // the triad executable
	Dir        string // parent of the nodes' data folders; must exist
	Frames     int
	Readers    int
	Gets       int
	BlockBytes int
	Hold       time.Duration
	MaxAnonMB  float64
	RingLimit  time.Duration
	Log        func(format string, args ...any)
}

// DefaultPinConfig is the attack: 80 stalled 4 MiB frames; 20
// readers of 500 gets of a 1 MiB block; a node's default soft memory
// limit (512 MiB) and 64 MiB for the collector's lag (a soft limit); 1 s.
func DefaultPinConfig() PinConfig {
	return PinConfig{Frames: 80, Readers: 20, Gets: 500, BlockBytes: 1 << 20, Hold: 15 * time.Second, MaxAnonMB: 576, RingLimit: time.Second}
}

// Validate checks the flags' values, naming a bad one.
func (c PinConfig) Validate() error {
	switch {
	case c.Frames < 0 || c.Readers < 0:
		return errors.New("--frames and --readers: want 0 or more")
	case c.Gets < 1 || c.BlockBytes < 1 || c.BlockBytes > 1<<20:
		return errors.New("--gets: want 1 or more; --block-bytes: 1 to 1 MiB (a block's largest)")
	case c.Hold <= 0 || c.RingLimit <= 0 || c.MaxAnonMB <= 0:
		return errors.New("--hold, --ring-limit and --max-anon-mb: want positive values")
	}
	return nil
}

// PinAttack is what one attack measured; MB are 2^20 bytes.
type PinAttack struct {
	Name       string  `json:"name"`
	BaseRSSMB  float64 `json:"base_rss_mb"`
	PeakRSSMB  float64 `json:"peak_rss_mb"`
	PeakAnonMB float64 `json:"peak_anon_mb"` // heap and stacks: what an attacker can pin
	PeakFileMB float64 `json:"peak_file_mb"` // mapped files (the stores' pages): the kernel reclaims them
	SentMB     float64 `json:"sent_mb"`      // what the attackers wrote
	Asked      int     `json:"asked"`        // frames or gets sent
	Rings      int     `json:"rings"`        // triad ring runs
	RingMaxMs  float64 `json:"ring_max_ms"`
	RingFailed int     `json:"ring_failed"`
	GetMs      float64 `json:"get_ms"` // a triad get of the block meanwhile
	GetError   string  `json:"get_error,omitempty"`
}

// PinResult is the run's two attacks and its verdict.
type PinResult struct {
	Attacks []PinAttack `json:"attacks"`
	Pass    bool        `json:"pass"`
}

// Pin runs the scenario.
func Pin(cfg PinConfig) (res PinResult, err error) {
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	dir, err := os.MkdirTemp(cfg.Dir, "triad-bench-pin-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	p := &pinRun{cfg: cfg, dir: dir}
	defer p.stop()
	if err := p.startNodes(); err != nil {
		return res, err
	}
	if err := p.putBlock(); err != nil {
		return res, err
	}
	res.Pass = true
	for _, a := range []struct {
		name   string
		attack func() (stop func() (sentMB float64, asked int), err error)
	}{{"stalled frames", p.stalledFrames}, {"unread replies", p.unreadReplies}} {
		if err := p.restartTarget(); err != nil {
			return res, err
		}
		m, err := p.measure(a.name, a.attack)
		if err != nil {
			return res, err
		}
		res.Attacks = append(res.Attacks, m)
		res.Pass = res.Pass && m.PeakAnonMB <= cfg.MaxAnonMB && m.RingFailed == 0 && m.RingMaxMs <= float64(cfg.RingLimit/time.Millisecond) && m.GetError == ""
	}
	return res, nil
}

// pinRun is a run in progress: the two nodes, the first the target.
type pinRun struct {
	cfg   PinConfig
	dir   string
	nodes []*proc.Proc
	addrs []string
	key   string
}

func (p *pinRun) startNodes() error {
	for i := range 2 {
		addr, err := freeLoopbackAddr()
		if err != nil {
			return err
		}
		args := []string{"node", "--listen", addr, "--data", filepath.Join(p.dir, fmt.Sprintf("node%d", i))}
		if i > 0 {
			args = append(args, "--join", p.addrs[0])
		}
		n := proc.New(proc.Config{Binary: p.cfg.Binary, Args: args, Log: filepath.Join(p.dir, fmt.Sprintf("node%d.log", i)), Name: "node " + addr})
		p.nodes, p.addrs = append(p.nodes, n), append(p.addrs, addr)
		if err := n.Start(); err != nil {
			return err
		}
		if err := n.WaitPort(addr, 10*time.Second); err != nil {
			return err
		}
	}
	return nil
}

func (p *pinRun) stop() {
	for _, n := range p.nodes {
		if n.Running() {
			n.Kill()
		}
	}
}

// triad runs the triad command with args and returns its output.
func (p *pinRun) triad(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, p.cfg.Binary, args...).CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("triad %s: no answer in %v", args[0], timeout)
	}
	return string(out), err
}

// putBlock stores the block the readers ask for, once the ring takes it.
func (p *pinRun) putBlock() error {
	file := filepath.Join(p.dir, "block")
	data := make([]byte, p.cfg.BlockBytes)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return err
	}
	var last error
	for range 30 {
		out, err := p.triad(10*time.Second, "put", file, "--addr", p.addrs[0])
		if err == nil {
			p.key = strings.TrimSpace(out)
			return nil
		}
		last = fmt.Errorf("%v: %s", err, out)
		time.Sleep(time.Second)
	}
	return fmt.Errorf("bench pin: the block was never stored: %w", last)
}

// restartTarget starts the first node afresh (its peak memory with it).
func (p *pinRun) restartTarget() error {
	n := p.nodes[0]
	if n.Running() {
		if err := n.Kill(); err != nil {
			return err
		}
	}
	if err := n.Start(); err != nil {
		return err
	}
	if err := n.WaitPort(p.addrs[0], 10*time.Second); err != nil {
		return err
	}
	for range 30 { // until it serves the block again
		if _, err := p.triad(5*time.Second, "get", p.key, "--addr", p.addrs[0]); err == nil {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return errors.New("bench pin: the restarted node never served the block")
}

// measure runs one attack for Hold, sampling the target's memory and
// timing the operator's commands.
func (p *pinRun) measure(name string, attack func() (func() (float64, int), error)) (PinAttack, error) {
	m := PinAttack{Name: name}
	pid := p.nodes[0].Pid()
	base, err := ProcessRSS(pid)
	if err != nil {
		return m, err
	}
	m.BaseRSSMB = base.Current
	p.cfg.Log("bench pin: %s against %s (%.0f MB resident)", name, p.addrs[0], base.Current)
	stop, err := attack()
	if err != nil {
		return m, err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the block, once, while the attack holds
		defer wg.Done()
		t0 := time.Now()
		if _, err := p.triad(10*time.Second, "get", p.key, "--addr", p.addrs[0]); err != nil {
			m.GetError = err.Error()
		}
		m.GetMs = float64(time.Since(t0).Microseconds()) / 1000
	}()
	end := time.Now().Add(p.cfg.Hold)
	nextRing := time.Now()
	for time.Now().Before(end) {
		if r, err := ProcessRSS(pid); err == nil {
			m.PeakRSSMB, m.PeakAnonMB, m.PeakFileMB = max(m.PeakRSSMB, r.Current), max(m.PeakAnonMB, r.Anon), max(m.PeakFileMB, r.File)
		}
		if time.Now().After(nextRing) {
			t0 := time.Now()
			_, err := p.triad(5*time.Second, "ring", "--addr", p.addrs[0])
			ms := float64(time.Since(t0).Microseconds()) / 1000
			m.Rings++
			m.RingMaxMs = max(m.RingMaxMs, ms)
			if err != nil {
				m.RingFailed++
			}
			nextRing = t0.Add(time.Second)
		}
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	m.SentMB, m.Asked = stop()
	p.cfg.Log("bench pin: %s: peak %.0f MB resident, ring at most %.0f ms", name, m.PeakRSSMB, m.RingMaxMs)
	return m, nil
}

// stalledFrames opens Frames connections that each send all but the last
// byte of a frame of the largest size.
func (p *pinRun) stalledFrames() (func() (float64, int), error) {
	size := wire.MaxFrameBytes
	frame := make([]byte, 4+size-1)
	binary.BigEndian.PutUint32(frame, uint32(size))
	return p.flood(p.cfg.Frames, func(c net.Conn) (int, int) {
		n, _ := c.Write(frame)
		return n, 1
	})
}

// unreadReplies opens Readers connections that each send Gets requests
// for the block and read nothing.
func (p *pinRun) unreadReplies() (func() (float64, int), error) {
	k, err := id.Parse(p.key, id.Bytes)
	if err != nil {
		return nil, err
	}
	var reqs []byte
	for i := range p.cfg.Gets {
		b := wire.Encode(nil, wire.Envelope{Kind: wire.Request, ReqID: uint64(i + 1), Msg: &wire.ClientGet{Key: k}})
		reqs = binary.BigEndian.AppendUint32(reqs, uint32(len(b)))
		reqs = append(reqs, b...)
	}
	return p.flood(p.cfg.Readers, func(c net.Conn) (int, int) {
		n, _ := c.Write(reqs)
		return n, p.cfg.Gets * n / len(reqs)
	})
}

// flood opens conns connections to the target and runs send on each in
// its own goroutine (a write that the node stops reading blocks until the
// attack ends); stop closes them and says what was written.
func (p *pinRun) flood(conns int, send func(net.Conn) (written, asked int)) (func() (float64, int), error) {
	var (
		mu      sync.Mutex
		open    []net.Conn
		written int
		asked   int
		wg      sync.WaitGroup
	)
	for range conns {
		c, err := net.DialTimeout("tcp", p.addrs[0], 5*time.Second)
		if err != nil {
			continue // refused past the node's connection bound: counted as not sent
		}
		open = append(open, c)
		c.SetWriteDeadline(time.Now().Add(p.cfg.Hold))
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, a := send(c)
			mu.Lock()
			written, asked = written+w, asked+a
			mu.Unlock()
		}()
	}
	return func() (float64, int) {
		for _, c := range open {
			c.Close()
		}
		wg.Wait()
		return float64(written) / (1 << 20), asked
	}, nil
}

// WriteText prints the run for people.
func (r PinResult) WriteText(w io.Writer) {
	for _, a := range r.Attacks {
		fmt.Fprintf(w, "%-15s  resident %4.0f -> peak %4.0f MB (anonymous %4.0f, files %4.0f)  (%d asked, %.0f MB written)  triad ring: %d runs, slowest %.0f ms, %d failed  triad get meanwhile: %.0f ms %s\n",
			a.Name, a.BaseRSSMB, a.PeakRSSMB, a.PeakAnonMB, a.PeakFileMB, a.Asked, a.SentMB, a.Rings, a.RingMaxMs, a.RingFailed, a.GetMs, a.GetError)
	}
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "bench pin: %s\n", verdict)
}
