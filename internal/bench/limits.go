package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"triad/internal/nntp"
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
	logf := cfg.Log
	if logf == nil {
		logf = func(string, ...any) {}
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
	addr, err := freeLoopbackAddr()
	if err != nil {
		return res, err
	}
	const group = "triad.limits"
	var srvLog bytes.Buffer
	start := func() (*exec.Cmd, error) {
		srv := command(cfg.Binary, "nntp", "--listen", addr, "--data", filepath.Join(dir, "news"), "--groups", group,
			"--max-conns", strconv.Itoa(cfg.Idle+100), "--max-per-addr", strconv.Itoa(cfg.Idle+100))
		srv.Stdout, srv.Stderr = &srvLog, &srvLog
		if err := srv.Start(); err != nil {
			return nil, err
		}
		return srv, waitListening(addr, 10*time.Second)
	}
	srv, err := start()
	defer func() {
		if srv != nil && srv.Process != nil {
			srv.Process.Kill()
			srv.Wait()
		}
		if err != nil {
			err = fmt.Errorf("%w\nserver log:\n%s", err, lastLines(srvLog.String(), 20))
		}
	}()
	if err != nil {
		return res, err
	}

	logf("bench limits: feeding %d articles", cfg.Articles)
	feed, err := NNTP(NNTPConfig{Addr: addr, SizeBytes: 600, Articles: cfg.Articles, Conns: 4, Group: group,
		MaxPhase: 5 * time.Minute, Phases: []string{"takethis"}})
	if err != nil {
		return res, fmt.Errorf("feeding: %w", err)
	}
	if p, ok := feed.Phase("takethis", 4); !ok || p.Done != cfg.Articles {
		return res, fmt.Errorf("feeding: %d of %d articles accepted (%s)", p.Done, cfg.Articles, p.FirstError)
	}
	res.Articles, res.ServerVersion = cfg.Articles, feed.Greeting
	rss, _ := ProcessRSS(srv.Process.Pid)
	res.FeedRSSMB = rss.Peak
	// A fresh process for the scenario, so that its peak is the
	// scenario's: the feed's is reported apart.
	srv.Process.Signal(os.Interrupt)
	if err = srv.Wait(); err != nil {
		return res, fmt.Errorf("the server did not stop cleanly after the feed: %w", err)
	}
	if srv, err = start(); err != nil {
		return res, err
	}

	logf("bench limits: opening %d idle connections", cfg.Idle)
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range cfg.Idle {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			res.IdleRefused++
			continue
		}
		idle = append(idle, c)
	}
	res.Idle = len(idle)
	rss, _ = ProcessRSS(srv.Process.Pid)
	res.IdleRSSMB = rss.Current

	// Sample the server's anonymous and file-backed memory meanwhile.
	stopSampling := make(chan struct{})
	sampled := make(chan RSS, 1)
	go func() {
		var top RSS
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if r, err := ProcessRSS(srv.Process.Pid); err == nil {
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

	// The slow reader asks and reads nothing.
	slow, err := nntp.Dial(addr, time.Now().Add(10*time.Second))
	if err != nil {
		return res, err
	}
	defer slow.Close()
	if _, err := slow.Cmd("GROUP " + group); err != nil {
		return res, err
	}
	if err := slow.Send("OVER 1-1000000"); err != nil {
		return res, err
	}

	// The OVER reader reads everything, meanwhile.
	var wg sync.WaitGroup
	wg.Add(1)
	var overErr error
	go func() {
		defer wg.Done()
		t0 := time.Now()
		c, err := nntp.Dial(addr, time.Now().Add(10*time.Second))
		if err != nil {
			overErr = err
			return
		}
		defer c.Close()
		c.Conn().SetDeadline(time.Now().Add(2 * time.Minute))
		if _, err := c.Cmd("GROUP " + group); err != nil {
			overErr = err
			return
		}
		l, err := c.Cmd("OVER 1-1000000")
		if err != nil || !bytes.HasPrefix(l, []byte("224")) {
			overErr = fmt.Errorf("OVER: %q %v", l, err)
			return
		}
		_, lines, err := c.ReadBlock(nil, 1<<30)
		if err != nil {
			overErr = err
			return
		}
		res.OverLines = lines
		res.OverSeconds = time.Since(t0).Seconds()
	}()

	// The normal client: GROUP, STAT and ARTICLE of random numbers.
	logf("bench limits: a normal client for %s while the OVERs run", cfg.Normal)
	lat, failed, firstErr := normalClient(addr, group, cfg.Articles, cfg.Normal)
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
		return res, fmt.Errorf("the OVER reader: %w", overErr)
	}
	// The slow reader is still connected unless the write timeout (1 min by
	// default) has passed: see whether the server has given up on it.
	slow.Conn().SetReadDeadline(time.Now().Add(time.Millisecond))
	if _, err := slow.Conn().Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		res.SlowDropped = true
	}
	close(stopSampling)
	top := <-sampled
	res.PeakAnonMB, res.PeakFileMB = top.Anon, top.File
	rss, err = ProcessRSS(srv.Process.Pid)
	if err != nil {
		return res, err
	}
	res.PeakRSSMB = rss.Peak
	return res, nil
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

func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitListening(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listening on %s after %s", addr, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}
