package status

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// LogEntry is one recorded warning or error.
type LogEntry struct {
	Time    time.Time
	Level   string
	Message string
	Attrs   string
}

// Recorder is a slog.Handler that passes every record on and keeps the
// last warnings and errors, for the status page.
type Recorder struct {
	next slog.Handler
	ring *entries
	pre  []slog.Attr
}

type entries struct {
	mu   sync.Mutex
	buf  []LogEntry
	next int
	full bool
}

// maxAttrsBytes bounds the attributes kept of one record.
const maxAttrsBytes = 512

// NewRecorder wraps next and keeps the last n warnings and errors.
func NewRecorder(next slog.Handler, n int) *Recorder {
	return &Recorder{next: next, ring: &entries{buf: make([]LogEntry, max(n, 1))}}
}

// Enabled implements slog.Handler: warnings are kept whatever next logs.
func (r *Recorder) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || r.next.Enabled(ctx, l)
}

// Handle implements slog.Handler.
func (r *Recorder) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Level >= slog.LevelWarn {
		e := LogEntry{Time: rec.Time, Level: rec.Level.String(), Message: rec.Message}
		add := func(a slog.Attr) bool {
			if len(e.Attrs) < maxAttrsBytes {
				if e.Attrs != "" {
					e.Attrs += " "
				}
				e.Attrs += a.String()
			}
			return true
		}
		for _, a := range r.pre {
			add(a)
		}
		rec.Attrs(add)
		if len(e.Attrs) > maxAttrsBytes {
			e.Attrs = e.Attrs[:maxAttrsBytes] + "…"
		}
		r.ring.add(e)
	}
	if r.next.Enabled(ctx, rec.Level) {
		return r.next.Handle(ctx, rec)
	}
	return nil
}

// WithAttrs implements slog.Handler.
func (r *Recorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Recorder{next: r.next.WithAttrs(attrs), ring: r.ring, pre: append(append([]slog.Attr(nil), r.pre...), attrs...)}
}

// WithGroup implements slog.Handler (groups are flattened in the page).
func (r *Recorder) WithGroup(name string) slog.Handler {
	return &Recorder{next: r.next.WithGroup(name), ring: r.ring, pre: r.pre}
}

// Recent returns the kept entries, newest first.
func (r *Recorder) Recent() []LogEntry { return r.ring.recent() }

func (e *entries) add(x LogEntry) {
	e.mu.Lock()
	e.buf[e.next] = x
	e.next = (e.next + 1) % len(e.buf)
	e.full = e.full || e.next == 0
	e.mu.Unlock()
}

func (e *entries) recent() []LogEntry {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.next
	if e.full {
		n = len(e.buf)
	}
	out := make([]LogEntry, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, e.buf[(e.next-i+len(e.buf))%len(e.buf)])
	}
	return out
}
