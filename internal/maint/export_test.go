package maint

// Waiting is how many rounds and sweeps wait on the repair budget.
func (m *Maint) Waiting() int { return len(m.waiting) }
