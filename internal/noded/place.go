package noded

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"time"

	"triad/internal/client"
	"triad/internal/ring"
	"triad/internal/tcp"
	"triad/internal/wire"
)

// Bounds of the survey a new node makes of the ring it joins.
const (
	// surveyHosts is the most hosts asked for their ring state. A ring of
	// more is not seen whole, and the node spreads its vnodes evenly by
	// themselves instead (ring.Place with no others).
	surveyHosts = 64
	// surveyTime bounds the whole survey, surveyCallTime one host's answer.
	surveyTime     = 10 * time.Second
	surveyCallTime = 2 * time.Second
)

// place chooses the ring positions of a new node with derived IDs (no
// state saved under its data folder yet) and saves them, before the host
// is built from them: the positions among the first a.deploy.Positions
// derived from its address that even out the hosts' shares of the ring it
// joins, which it surveys through a.deploy.Bootstrap (ring.Place). A node
// with a state keeps its positions; one that cannot see the whole ring
// spreads its vnodes evenly by themselves.
func place(ctx context.Context, drv *tcp.Driver, a assembly, log *slog.Logger) error {
	st := drv.Storage()
	switch _, err := st.ReadFile(ring.StateFile); {
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	d := a.deploy
	if d.Positions <= d.Vnodes || d.Vnodes == 1 {
		return nil // no choice (vnode 0 is always one): LoadDerivedState takes the first positions
	}
	self := drv.Addr()
	var others []wire.NodeRef
	if d.Bootstrap != "" {
		opt := client.Options{TLS: a.driver.TLS}
		if opt.TLS != nil {
			// A node's certificate speaks for its address and vnodes only.
			opt.From = wire.NodeRef{ID: ring.VnodeID(self, 0), Addr: self, Machine: opt.TLS.Self.MachineID()}
		}
		var err error
		if others, err = survey(ctx, self, d.Bootstrap, opt); err != nil {
			log.Warn("could not see the whole ring to choose this node's positions by; it spreads its vnodes evenly by themselves", "err", err)
			others = nil
		}
	}
	ids, err := ring.Place(self, d.Vnodes, d.Positions, d.Blocks.Span(wire.RedundancyDefault), others)
	if err != nil {
		return err
	}
	log.Info("chose this node's ring positions", "vnodes", d.Vnodes, "among", d.Positions, "ring vnodes seen", len(others))
	return ring.SeedIDs(st, ids)
}

// survey returns every vnode of the ring that bootstrap is on, as far as
// self (the new node) sees it: it asks each host it hears of for its ring
// state (its vnodes, their successor and predecessor lists), from
// bootstrap on, until none is new. Only references whose IDs derive from
// their addresses count (so at most ring.MaxVnodes an address), and only
// of hosts that answered: anyone can list a made-up host, but not make it
// answer. survey fails if bootstrap does not answer, or if the ring has
// more than surveyHosts hosts or is not seen whole within surveyTime.
func survey(ctx context.Context, self, bootstrap string, opt client.Options) ([]wire.NodeRef, error) {
	ctx, cancel := context.WithTimeout(ctx, surveyTime)
	defer cancel()
	queue := []string{bootstrap}
	listed := map[string]map[wire.NodeRef]bool{bootstrap: {}} // an address's vnodes, as listed by anyone
	answered := map[string]bool{}
	for len(queue) > 0 {
		addr := queue[0]
		queue = queue[1:]
		info, err := ringInfo(ctx, addr, opt)
		if err != nil {
			if addr == bootstrap || ctx.Err() != nil {
				return nil, err
			}
			continue
		}
		answered[addr] = true
		for _, v := range info.Vnodes {
			for _, r := range append(append([]wire.NodeRef{v.Self}, v.Succs...), v.Preds...) {
				if _, ok := ring.VnodeIndex(r); !ok || r.Addr == self {
					continue
				}
				r = wire.NodeRef{ID: r.ID, Addr: r.Addr}
				vs, known := listed[r.Addr]
				if !known {
					if len(listed) == surveyHosts {
						return nil, fmt.Errorf("the ring has more than %d hosts", surveyHosts)
					}
					vs = map[wire.NodeRef]bool{}
					listed[r.Addr] = vs
					queue = append(queue, r.Addr)
				}
				vs[r] = true
			}
		}
	}
	var vnodes []wire.NodeRef
	for addr, vs := range listed {
		if answered[addr] {
			for r := range vs {
				vnodes = append(vnodes, r)
			}
		}
	}
	slices.SortFunc(vnodes, func(a, b wire.NodeRef) int { return a.ID.Cmp(b.ID) })
	return vnodes, nil
}

// ringInfo asks the host at addr for its ring state.
func ringInfo(ctx context.Context, addr string, opt client.Options) (*wire.RingInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, surveyCallTime)
	defer cancel()
	m, err := client.Call(ctx, addr, &wire.GetRingInfo{}, opt)
	if err != nil {
		return nil, fmt.Errorf("ring state from %s: %w", addr, err)
	}
	info, ok := m.(*wire.RingInfo)
	if !ok {
		return nil, fmt.Errorf("ring state from %s: a %v in reply", addr, m.Type())
	}
	return info, nil
}
