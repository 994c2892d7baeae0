package maint

import (
	"time"

	"triad/internal/node"
)

// budgetTimer fires when the repair budget has tokens again.
type budgetTimer struct{}

func (budgetTimer) String() string { return "maint-budget" }

// spendable reports whether the budget lets another transfer start now,
// and if so counts it in flight until done. Under a budget one transfer
// runs at a time, so that the host never runs ahead of it by more than one
// object (a transfer's size is known only once it has come). A refused
// caller queues itself once with await.
func (m *Maint) spendable(env node.Env) bool {
	if m.cfg.Budget == 0 {
		return true
	}
	m.refill(env.Now())
	if m.tokens > 0 && m.transfers == 0 {
		m.transfers++
		return true
	}
	if m.transfers == 0 && !m.resume {
		m.resume = true
		wait := time.Duration((1 - m.tokens) / float64(m.cfg.Budget) * float64(time.Second))
		env.After(max(wait, time.Millisecond), budgetTimer{})
	}
	return false
}

// await queues wake to run when the budget may let a transfer start: each
// round and sweep queues itself at most once, so the queue is as long as
// the rounds and sweeps waiting.
func (m *Maint) await(wake func(node.Env)) { m.waiting = append(m.waiting, wake) }

// done ends a transfer that spendable let start, and wakes what waits.
func (m *Maint) done(env node.Env) {
	if m.cfg.Budget == 0 {
		return
	}
	m.transfers--
	m.wake(env)
}

// wake runs what waits on the budget (each re-checks it).
func (m *Maint) wake(env node.Env) {
	waiting := m.waiting
	m.waiting = nil
	for _, w := range waiting {
		w(env)
	}
}

// spend takes n bytes from the budget (it may go below zero: a transfer's
// size is known only once it has come).
func (m *Maint) spend(now time.Time, n int) {
	if m.cfg.Budget == 0 {
		return
	}
	m.refill(now)
	m.tokens -= float64(m.weigh(n))
}

// weigh is what n bytes moved count for (Config.Weight).
func (m *Maint) weigh(n int) uint64 { return uint64(n) * uint64(max(1, m.cfg.Weight)) }

func (m *Maint) refill(now time.Time) {
	if !m.filled.IsZero() {
		m.tokens += now.Sub(m.filled).Seconds() * float64(m.cfg.Budget)
	}
	m.tokens = min(m.tokens, float64(m.cfg.Budget))
	m.filled = now
}
