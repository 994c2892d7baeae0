package maint

import (
	"time"

	"triad/internal/node"
)

// checkTimer fires when a vnode's next round or sweep is due.
type checkTimer struct{}

func (checkTimer) String() string { return "maint-check" }

// neighboursChanged runs when the ring changed a vnode's successor or
// predecessor: it looks again once the change has lasted cfg.Settle.
func (m *Maint) neighboursChanged(env node.Env) {
	m.settleAt = env.Now().Add(m.cfg.Settle)
	m.setTimer(env, m.settleAt)
}

// check starts the rounds and sweeps that are due, and a round at once on
// a vnode whose successor or predecessor changed since its last round;
// then it sets the timer for the next due one. The ring calls it when a
// neighbour changes, and rounds and sweeps when they end.
func (m *Maint) check(env node.Env) {
	if m.checking {
		return // a round that ended at once, inside this check
	}
	m.checking = true
	defer func() { m.checking = false }()
	now := env.Now()
	m.now = now
	var next time.Time
	for _, v := range m.chord.Vnodes() {
		st := m.state[v]
		if st == nil || m.paused {
			continue
		}
		if st.sweep == nil && !now.Before(st.sweepDue) {
			m.startSweep(env, v, st)
		}
		if st.round == nil {
			changed := false
			if !now.Before(m.settleAt) {
				changed = !samePlan(st.plan, m.plan(v, m.excluded(env), m.suspected(now)))
			}
			if changed || !now.Before(st.due) {
				m.startRound(env, v, st)
			}
		}
		if st.round == nil && (next.IsZero() || st.due.Before(next)) {
			next = st.due
		}
		if st.sweep == nil && (next.IsZero() || st.sweepDue.Before(next)) {
			next = st.sweepDue
		}
	}
	if now.Before(m.settleAt) && (next.IsZero() || m.settleAt.Before(next)) {
		next = m.settleAt
	}
	m.setTimer(env, next)
}

// setTimer makes the check timer fire at t, unless it fires sooner.
func (m *Maint) setTimer(env node.Env, t time.Time) {
	if t.IsZero() || !m.timerAt.IsZero() && !t.Before(m.timerAt) {
		return
	}
	if m.cancelTimer != nil {
		m.cancelTimer()
	}
	m.timerAt = t
	m.cancelTimer = env.After(max(t.Sub(env.Now()), time.Millisecond), checkTimer{})
}

func (m *Maint) sweepInterval() time.Duration {
	if m.cfg.SweepInterval > 0 {
		return m.cfg.SweepInterval
	}
	return m.cfg.Interval
}

func (m *Maint) jitter(env node.Env, d time.Duration) time.Duration {
	return d*3/4 + time.Duration(env.Rand().Int64N(int64(d)/2+1))
}
