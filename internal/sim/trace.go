package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Action is what a failure-trace line does.
type Action string

// Trace actions. See docs/sim.md for the file format.
const (
	ActCrash     Action = "crash"      // host stops; its disk survives
	ActCrashWipe Action = "crash-wipe" // host stops and loses its disk
	ActRestart   Action = "restart"    // a crashed host boots from its disk
	ActLeave     Action = "leave"      // host leaves gracefully
	ActJoin      Action = "join"       // a new host joins
	ActPartition Action = "partition"  // split the network into groups
	ActHeal      Action = "heal"       // end the partition
)

// TraceEvent is one line of a failure trace.
type TraceEvent struct {
	At     time.Duration
	Action Action
	Host   int     // for crash, crash-wipe, restart, leave
	Groups [][]int // for partition
}

// Limits on trace files.
const (
	maxTraceLines = 1 << 20
	maxTraceLine  = 64 << 10
)

// ParseTrace reads a failure trace: one event per line,
//
//	<seconds> <action> [host | group group ...]
//
// where a group is a comma-separated list of host indices and ranges
// ("0-99,150"). Blank lines and lines starting with # are skipped. Times
// must not decrease.
func ParseTrace(r io.Reader) ([]TraceEvent, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxTraceLine)
	var out []TraceEvent
	var last time.Duration
	for n := 1; sc.Scan(); n++ {
		if n > maxTraceLines {
			return nil, fmt.Errorf("trace: more than %d lines", maxTraceLines)
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ev, err := parseTraceLine(line)
		if err != nil {
			return nil, fmt.Errorf("trace line %d: %w", n, err)
		}
		if ev.At < last {
			return nil, fmt.Errorf("trace line %d: time %v before %v", n, ev.At, last)
		}
		last = ev.At
		out = append(out, ev)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	return out, nil
}

func parseTraceLine(line string) (TraceEvent, error) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return TraceEvent{}, errors.New("want <seconds> <action> [args]")
	}
	sec, err := strconv.ParseFloat(f[0], 64)
	if err != nil || sec < 0 || math.IsNaN(sec) || sec > 1e9 {
		return TraceEvent{}, fmt.Errorf("bad time %q", f[0])
	}
	ev := TraceEvent{At: time.Duration(sec * float64(time.Second)), Action: Action(f[1])}
	switch ev.Action {
	case ActCrash, ActCrashWipe, ActRestart, ActLeave:
		if len(f) != 3 {
			return ev, fmt.Errorf("%s wants one host", ev.Action)
		}
		if ev.Host, err = parseHost(f[2]); err != nil {
			return ev, err
		}
	case ActJoin, ActHeal:
		if len(f) != 2 {
			return ev, fmt.Errorf("%s takes no arguments", ev.Action)
		}
	case ActPartition:
		if len(f) < 3 {
			return ev, fmt.Errorf("partition wants at least one group")
		}
		for _, g := range f[2:] {
			hosts, err := parseGroup(g)
			if err != nil {
				return ev, err
			}
			ev.Groups = append(ev.Groups, hosts)
		}
	default:
		return ev, fmt.Errorf("unknown action %q", f[1])
	}
	return ev, nil
}

func parseHost(s string) (int, error) {
	h, err := strconv.Atoi(s)
	if err != nil || h < 0 || h >= MaxHosts {
		return 0, fmt.Errorf("bad host %q", s)
	}
	return h, nil
}

func parseGroup(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseHost(lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = parseHost(hi); err != nil || b < a {
				return nil, fmt.Errorf("bad range %q", part)
			}
		}
		if len(out)+b-a+1 > MaxHosts {
			return nil, fmt.Errorf("group too large")
		}
		for h := a; h <= b; h++ {
			out = append(out, h)
		}
	}
	return out, nil
}

// Apply schedules the events of a trace; join builds the state machine of
// hosts added by join lines. Events naming a host that does not exist at
// their time are skipped.
func (s *Sim) Apply(tr []TraceEvent, join Factory) {
	for _, ev := range tr {
		s.At(ev.At, func() {
			var h *Host
			if ev.Host < len(s.hosts) {
				h = s.hosts[ev.Host]
			}
			switch ev.Action {
			case ActCrash, ActCrashWipe:
				if h != nil && h.up {
					if ev.Action == ActCrashWipe {
						s.Wipe(h)
					} else {
						s.Crash(h)
					}
				}
			case ActRestart:
				if h != nil && !h.up {
					if err := s.Restart(h); err != nil {
						s.Stats.BootFailures++ // it stays down, as in life
					}
				}
			case ActLeave:
				if h != nil {
					s.Leave(h)
				}
			case ActJoin:
				if _, err := s.AddHost(join); err != nil {
					s.Stats.BootFailures++
				}
			case ActPartition:
				s.Partition(ev.Groups...)
			case ActHeal:
				s.Heal()
			}
		})
	}
}
