// Package fault is triad's one error vocabulary: a small set of codes, each
// with a name, a number that never changes (internal/wire's
// testdata/errcodes.txt is the append-only registry) and one sentinel
// error. The storage engine returns these sentinels, the protocols send
// their codes in Error replies, and the news server maps them to NNTP
// replies, so one errors.Is test holds for an error made in this process
// and for one that crossed the wire:
//
//	if errors.Is(err, fault.ErrNotFound) { ... }
//	if errors.Is(err, fault.ErrBusy) { ... } // try later
//
// A package may refine a sentinel (New): store.ErrConflict is a bad
// request that this process can tell apart; across the wire it travels as
// its parent's code.
//
// Layer: a leaf, below id. It imports no other package of triad, so every
// layer, from the engine to the NNTP server, may use it.
package fault
