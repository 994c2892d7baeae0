package d2client

import (
	"context"
	"fmt"
	"slices"

	"triad/internal/d2/key"
	"triad/internal/id"
	"triad/internal/wire"
)

// Holder is one node's answer to whether it holds a key.
type Holder struct {
	Addr  string
	Owner bool  // the key's owner (its successor on D2's ring)
	Holds bool  // it holds the block itself (not only a pointer)
	Err   error // it did not answer
}

// maxHops bounds an iterative lookup's steps (D2's own bound is alike).
const maxHops = 64

// Holders lists the key's owner and the successors the owner names, and
// whether each holds k's block, asking each in turn: where a block's
// replicas live (the first r of the list, when the ring is whole).
func (b *Blocks) Holders(ctx context.Context, k key.Key) ([]Holder, error) {
	next, err := b.lookup(ctx, k.ID())
	if err != nil {
		return nil, err
	}
	refs := append([]wire.D2Ref{next.Owner}, next.Succs...)
	var out []Holder
	seen := map[string]bool{}
	one := id.Min(key.Size).AddPow2(0)
	for i, r := range refs {
		if seen[r.Node.Addr] {
			continue
		}
		seen[r.Node.Addr] = true
		h := Holder{Addr: r.Node.Addr, Owner: i == 0}
		a := b.callOne(ctx, r.Node.Addr, &wire.D2Keys{Lo: k.ID().Sub(one), Hi: k.ID(), Max: 1})
		switch l, ok := a.msg.(*wire.D2KeyList); {
		case a.err != nil:
			h.Err = a.err
		case !ok:
			h.Err = fmt.Errorf("d2client: keys answered with %T", a.msg)
		default:
			h.Holds = slices.ContainsFunc(l.Keys, func(x id.ID) bool { return x == k.ID() })
		}
		out = append(out, h)
	}
	return out, nil
}

// lookup finds k's owner by an iterative lookup from the node that last
// answered (on to the next node if it cannot start one).
func (b *Blocks) lookup(ctx context.Context, k id.ID) (*wire.D2Next, error) {
	a := b.call(ctx, &wire.D2FindSucc{Key: k}, nil)
	for hop := 0; ; hop++ {
		if a.err != nil {
			return nil, fmt.Errorf("d2client: lookup of %v at %s: %w", k, a.addr, a.err)
		}
		next, ok := a.msg.(*wire.D2Next)
		switch {
		case !ok:
			return nil, fmt.Errorf("d2client: %s answered a lookup with %T", a.addr, a.msg)
		case next.Done:
			return next, nil
		case next.Next.IsZero() || hop == maxHops:
			return nil, fmt.Errorf("d2client: lookup of %v found no route after %d steps", k, hop+1)
		}
		a = b.callOne(ctx, next.Next.Node.Addr, &wire.D2FindSucc{Key: k})
	}
}
