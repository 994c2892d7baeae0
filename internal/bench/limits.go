package bench

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"triad/internal/nntp"
	"triad/internal/proc"
)

// LimitsConfig is one run of the news server's bounded-totals scenario: a
// real `triad nntp` process, filled with Articles small articles, then at
// once Idle idle connections, a reader that asks for a long OVER and reads
// none of it, and one that reads it all, while a normal client measures
// how fast it is answered.
type LimitsConfig struct {
	Binary   string // the triad executable
	Dir      string // parent of the server's data folder; must exist
	Idle     int    // idle connections held open
	Articles int    // articles in the group before the scenario
	Normal   time.Duration
	Log      func(format string, args ...any)
}

// LimitsResult is what the scenario measured; MB are 2^20 bytes.
type LimitsResult struct {
	Idle          int     `json:"idle_connections"`
	IdleRefused   int     `json:"idle_refused"`
	Articles      int     `json:"articles"`
	OverLines     int     `json:"over_lines"`
	OverSeconds   float64 `json:"over_seconds"`
	SlowDropped   bool    `json:"slow_reader_dropped"`
	NormalOps     int     `json:"normal_ops"`
	NormalFailed  int     `json:"normal_failed"`
	NormalP50Ms   float64 `json:"normal_p50_ms"`
	NormalP99Ms   float64 `json:"normal_p99_ms"`
	NormalMaxMs   float64 `json:"normal_max_ms"`
	PeakRSSMB     float64 `json:"peak_rss_mb"`
	IdleRSSMB     float64 `json:"rss_with_idle_mb"`
	PeakAnonMB    float64 `json:"peak_anon_mb"`     // sampled: heap and stacks
	PeakFileMB    float64 `json:"peak_file_mb"`     // sampled: mapped files (the bbolt database)
	FeedRSSMB     float64 `json:"feed_peak_rss_mb"` // the feed's own peak, in an earlier process
	FirstError    string  `json:"first_error,omitempty"`
	ServerVersion string  `json:"server"`
}

// Limits runs the scenario and stops the server.
func Limits(cfg LimitsConfig) (res LimitsResult, err error) {
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	if cfg.Idle < 0 || cfg.Articles < 1 {
		return res, errors.New("bench: idle connections must not be negative, and articles positive")
	}
	if cfg.Normal <= 0 {
		cfg.Normal = 5 * time.Second
	}
	dir, err := os.MkdirTemp(cfg.Dir, "triad-bench-limits-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	run, err := newLimitsRun(cfg, dir)
	if err != nil {
		return res, err
	}
	defer func() {
		if kerr := run.srv.Kill(); kerr != nil {
			cfg.Log("bench limits: %v", kerr)
		}
		if err != nil {
			err = fmt.Errorf("%w\nserver log:\n%s", err, run.srv.Tail(20))
		}
	}()
	defer run.closeIdle()
	if err := run.startServer(); err != nil {
		return run.res, err
	}
	if err := run.feed(); err != nil {
		return run.res, err
	}
	run.openIdle()
	err = run.underLoad()
	return run.res, err
}

// limitsGroup is the group the scenario fills and reads.
const limitsGroup = "triad.limits"

// limitsRun is one run of Limits. Its steps run in this order:
// startServer, feed (which restarts the server), openIdle, underLoad
// (the OVER readers, the normal client and the memory samples).
type limitsRun struct {
	cfg  LimitsConfig
	addr string
	srv  *proc.Proc
	idle []net.Conn
	res  LimitsResult
}

func newLimitsRun(cfg LimitsConfig, dir string) (*limitsRun, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	srv := proc.New(proc.Config{Binary: cfg.Binary, Log: filepath.Join(dir, "news.log"),
		Args: []string{"nntp", "--listen", addr, "--data", filepath.Join(dir, "news"), "--groups", limitsGroup,
			"--max-conns", strconv.Itoa(cfg.Idle + 100), "--max-per-addr", strconv.Itoa(cfg.Idle + 100)}})
	return &limitsRun{cfg: cfg, addr: addr, srv: srv}, nil
}

// startServer starts the news server and waits until it listens.
func (run *limitsRun) startServer() error {
	if err := run.srv.Start(); err != nil {
		return err
	}
	return run.srv.WaitPort(run.addr, 10*time.Second)
}

// feed fills the group with TAKETHIS, notes the feed's peak memory, and
// starts a fresh server for the scenario, so that its peak is the
// scenario's.
func (run *limitsRun) feed() error {
	cfg := run.cfg
	cfg.Log("bench limits: feeding %d articles", cfg.Articles)
	feed, err := NNTP(NNTPConfig{Addr: run.addr, SizeBytes: 600, Articles: cfg.Articles, Conns: 4, Group: limitsGroup,
		MaxPhase: 5 * time.Minute, Phases: []string{"takethis"}})
	if err != nil {
		return fmt.Errorf("feeding: %w", err)
	}
	if p, ok := feed.Phase("takethis", 4); !ok || p.Done != cfg.Articles {
		return fmt.Errorf("feeding: %d of %d articles accepted (%s)", p.Done, cfg.Articles, p.FirstError)
	}
	run.res.Articles, run.res.ServerVersion = cfg.Articles, feed.Greeting
	rss, _ := ProcessRSS(run.srv.Pid())
	run.res.FeedRSSMB = rss.Peak
	if err := run.srv.Stop(os.Interrupt, 5*time.Minute); err != nil {
		return fmt.Errorf("the server did not stop cleanly after the feed: %w", err)
	}
	return run.startServer()
}

// openIdle opens cfg.Idle connections and leaves them idle.
func (run *limitsRun) openIdle() {
	run.cfg.Log("bench limits: opening %d idle connections", run.cfg.Idle)
	for range run.cfg.Idle {
		c, err := net.DialTimeout("tcp", run.addr, 5*time.Second)
		if err != nil {
			run.res.IdleRefused++
			continue
		}
		run.idle = append(run.idle, c)
	}
	run.res.Idle = len(run.idle)
	rss, _ := ProcessRSS(run.srv.Pid())
	run.res.IdleRSSMB = rss.Current
}

func (run *limitsRun) closeIdle() {
	for _, c := range run.idle {
		c.Close()
	}
}

// underLoad runs the scenario: a slow reader asks for the whole overview
// and reads none of it, another reads it all, and meanwhile a normal
// client measures how fast it is answered and the server's memory is
// sampled.
func (run *limitsRun) underLoad() error {
	res := &run.res
	stopSampling := run.sampleMemory()
	slow, err := run.slowReader()
	if err != nil {
		stopSampling()
		return err
	}
	defer slow.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	var overErr error
	go func() {
		defer wg.Done()
		overErr = run.readOver()
	}()

	// The normal client: GROUP, STAT and ARTICLE of random numbers.
	run.cfg.Log("bench limits: a normal client for %s while the OVERs run", run.cfg.Normal)
	lat, failed, firstErr := normalClient(run.addr, limitsGroup, run.cfg.Articles, run.cfg.Normal)
	res.NormalOps, res.NormalFailed = len(lat), failed
	if firstErr != nil {
		res.FirstError = firstErr.Error()
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		res.NormalP50Ms = quantileMs(lat, 0.5)
		res.NormalP99Ms = quantileMs(lat, 0.99)
		res.NormalMaxMs = float64(lat[len(lat)-1]) / float64(time.Millisecond)
	}
	wg.Wait()
	if overErr != nil {
		stopSampling()
		return fmt.Errorf("the OVER reader: %w", overErr)
	}
	// The slow reader is still connected unless the write timeout (1 min by
	// default) has passed: see whether the server has given up on it.
	slow.Conn().SetReadDeadline(time.Now().Add(time.Millisecond))
	if _, err := slow.Conn().Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		res.SlowDropped = true
	}
	top := stopSampling()
	res.PeakAnonMB, res.PeakFileMB = top.Anon, top.File
	rss, err := ProcessRSS(run.srv.Pid())
	if err != nil {
		return err
	}
	res.PeakRSSMB = rss.Peak
	return nil
}

// sampleMemory samples the server's anonymous and file-backed memory every
// 20 ms until the returned function is called, which returns the peaks.
func (run *limitsRun) sampleMemory() (stop func() RSS) {
	stopSampling := make(chan struct{})
	sampled := make(chan RSS, 1)
	pid := run.srv.Pid()
	go func() {
		var top RSS
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if r, err := ProcessRSS(pid); err == nil {
				top.Anon, top.File = max(top.Anon, r.Anon), max(top.File, r.File)
			}
			select {
			case <-stopSampling:
				sampled <- top
				return
			case <-tick.C:
			}
		}
	}()
	return func() RSS {
		close(stopSampling)
		return <-sampled
	}
}

// slowReader asks for the whole overview and reads nothing.
func (run *limitsRun) slowReader() (*nntp.Client, error) {
	slow, err := nntp.Dial(run.addr, time.Now().Add(10*time.Second))
	if err != nil {
		return nil, err
	}
	if _, err := slow.Cmd("GROUP " + limitsGroup); err != nil {
		slow.Close()
		return nil, err
	}
	if err := slow.Send("OVER 1-1000000"); err != nil {
		slow.Close()
		return nil, err
	}
	return slow, nil
}

// readOver reads the whole overview, timing it.
func (run *limitsRun) readOver() error {
	t0 := time.Now()
	c, err := nntp.Dial(run.addr, time.Now().Add(10*time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	c.Conn().SetDeadline(time.Now().Add(2 * time.Minute))
	if _, err := c.Cmd("GROUP " + limitsGroup); err != nil {
		return err
	}
	if _, err := c.Expect("OVER 1-1000000", nntp.CodeOverviewFollows); err != nil {
		return err
	}
	_, lines, err := c.ReadBlock(nil, 1<<30)
	if err != nil {
		return err
	}
	run.res.OverLines = lines
	run.res.OverSeconds = time.Since(t0).Seconds()
	return nil
}

// normalClient runs GROUP, STAT and ARTICLE commands for d and returns each
// command's latency.
func normalClient(addr, group string, articles int, d time.Duration) (lat []time.Duration, failed int, firstErr error) {
	c, err := nntp.Dial(addr, time.Now().Add(10*time.Second))
	if err != nil {
		return nil, 1, err
	}
	defer c.Close()
	fail := func(err error) {
		failed++
		if firstErr == nil {
			firstErr = err
		}
	}
	end := time.Now().Add(d)
	for i := 0; time.Now().Before(end) && failed < 10; i++ {
		n := 1 + (i*7919)%articles
		for _, cmd := range []string{"GROUP " + group, fmt.Sprintf("STAT %d", n), fmt.Sprintf("ARTICLE %d", n)} {
			c.Conn().SetDeadline(time.Now().Add(10 * time.Second))
			t0 := time.Now()
			l, err := c.Cmd(cmd)
			if err == nil && cmd[0] == 'A' && bytes.HasPrefix(l, []byte("220")) {
				_, _, err = c.ReadBlock(nil, 1<<20)
			}
			if err != nil || len(l) == 0 || l[0] != '2' {
				fail(fmt.Errorf("%s: %q %v", cmd, l, err))
				continue
			}
			lat = append(lat, time.Since(t0))
		}
	}
	return lat, failed, firstErr
}

// RSS is a process's resident memory, in MiB.
type RSS struct{ Current, Peak, Anon, File float64 }

// ProcessRSS reads a process's resident set (VmRSS), its peak (VmHWM) and
// their anonymous and file-backed parts from /proc.
func ProcessRSS(pid int) (RSS, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return RSS{}, err
	}
	defer f.Close()
	var r RSS
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			r.Current = kb / 1024
		case "VmHWM":
			r.Peak = kb / 1024
		case "RssAnon":
			r.Anon = kb / 1024
		case "RssFile":
			r.File = kb / 1024
		}
	}
	return r, sc.Err()
}

// nodeAddr is the address of node i of a run: 127.0.0.1:base+i, or a
// free port when base is 0 (the runs' --port).
func nodeAddr(base, i int) (string, error) {
	if base == 0 {
		return freeLoopbackAddr()
	}
	return fmt.Sprintf("127.0.0.1:%d", base+i), nil
}

// checkPort checks a run's --port for nodes processes.
func checkPort(base, nodes int) error {
	if base != 0 && (base < 1024 || base+nodes-1 > 65535) {
		return fmt.Errorf("--port %d: want 0 (free ports) or 1024 to %d, so that its %d nodes' ports fit", base, 65535-nodes+1, nodes)
	}
	return nil
}

// addPortFlag defines a run's --port.
func addPortFlag(fs *flag.FlagSet, p *int) {
	fs.IntVar(p, "port", *p, "node i listens on 127.0.0.1:`P`+i (0: free ports, picked by the run)")
}

func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
