package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// durationFlag is a flag.Value for a duration that may also be given in
// days, as retention is ("30d", "1d12h"): Go's time.ParseDuration stops
// at hours, and its error ("parse error") names no unit.
type durationFlag struct{ d *time.Duration }

// addDurationFlag defines a durationFlag as fs.Duration defines a flag.
func addDurationFlag(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	d := new(time.Duration)
	*d = value
	fs.Var(durationFlag{d}, name, usage)
	return d
}

func (f durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	if d := *f.d; d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := parseDays(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 90m, 12h or 30d (units: ms, s, m, h, d)")
	}
	*f.d = d
	return nil
}

// parseDays is time.ParseDuration with a leading count of days allowed:
// "30d", "1d12h", "-2d".
func parseDays(s string) (time.Duration, error) {
	sign, rest := time.Duration(1), s
	if r, ok := strings.CutPrefix(rest, "-"); ok {
		sign, rest = -1, r
	}
	days, more, ok := strings.Cut(rest, "d")
	if !ok {
		return time.ParseDuration(s)
	}
	n, err := strconv.ParseUint(days, 10, 16)
	if err != nil {
		return 0, err
	}
	d := time.Duration(n) * 24 * time.Hour
	if more != "" {
		m, err := time.ParseDuration(more)
		if err != nil || m < 0 {
			return 0, fmt.Errorf("bad duration %q", s)
		}
		d += m
	}
	return sign * d, nil
}
