package maint

// Waiting is how many rounds and sweeps wait on the repair budget.
func (m *Maint) Waiting() int { return len(m.waiting) }

// Transfers is how many transfers the repair budget counts in flight.
func (m *Maint) Transfers() int { return m.transfers }
