package exp

import (
	"fmt"
	"io"
	"slices"
	"time"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/sim"
	"triad/internal/tapestry"
	"triad/internal/wire"
)

// The rogue experiment (issue 44): insiders in the mesh, nodes with valid
// identities running code of their own, lie about other servers' objects
// while honest clients locate them. Each round, every rogue sends random
// nodes pointers that name an honest node, which serves nothing of it, as
// server of real objects and of keys nobody serves, pointers that name an
// address where nothing runs, and removals of the real servers' pointers.
// A locate counts as found only when it ends at the object's real server;
// `locate --all` (LocateAll) must name no server but the real one.
func init() {
	TapestryExperiments = append(TapestryExperiments, "rogue")
	tapestryRuns["rogue"] = runTapRogue
}

// TapestryRogue is the rogue experiment's figures, a part of
// TapestryResult.
type TapestryRogue struct {
	RogueNodes    int `json:"rogue_nodes"`
	RogueInsiders int `json:"rogue_insiders"`
	RogueObjects  int `json:"rogue_objects"`
	// RogueForgedSent and RogueRemovesSent are the lies told: pointers
	// naming a server that does not serve the key, and removals of real
	// servers' pointers, each sent to one node.
	RogueForgedSent  int `json:"rogue_forged_sent"`
	RogueRemovesSent int `json:"rogue_removes_sent"`
	// Locates of real objects from honest nodes, and those that ended at
	// the object's real server.
	RogueLocates int     `json:"rogue_locates"`
	RogueFound   int     `json:"rogue_found"`
	RogueShare   float64 `json:"rogue_found_share"`
	// Locates of keys nobody serves that ended anywhere but not found.
	RogueNobodyLocates int `json:"rogue_nobody_locates"`
	RogueNobodyFound   int `json:"rogue_nobody_found"`
	// LocateAll lists: how many, and the servers they named that do not
	// serve the object.
	RogueLists        int `json:"rogue_lists"`
	RogueListedForged int `json:"rogue_listed_forged"`
	// What the honest nodes counted: forged pointers dropped, removals
	// refused.
	RoguePointersForged uint64 `json:"rogue_pointers_forged"`
	RogueRemovesRefused uint64 `json:"rogue_removes_refused"`
}

// rogueRun is one rogue experiment in progress.
type rogueRun struct {
	m       *tapMesh
	rogues  []*sim.Host
	honest  []*sim.Host
	objects []id.ID
	res     *TapestryRogue
}

func runTapRogue(cfg TapestryConfig, res *TapestryResult) error {
	n := cfg.nodes(830)
	m, err := newTapMesh(cfg.Seed, n, tapestry.DefaultConfig(), time.Second)
	if err != nil {
		return err
	}
	m.pace.gap = 10 * time.Millisecond
	rr := &rogueRun{m: m, res: &res.TapestryRogue}
	insiders := max(1, n/20)
	rr.rogues, rr.honest = m.hosts[:insiders], m.hosts[insiders:]
	for _, h := range rr.honest[:min(20, len(rr.honest))] {
		rr.objects = append(rr.objects, m.publish(h, 5)...)
	}
	m.s.RunFor(time.Minute)
	rr.res.RogueNodes, rr.res.RogueInsiders, rr.res.RogueObjects = n, insiders, len(rr.objects)
	rounds := cfg.pick(4, 10)
	for range rounds {
		rr.lie()
		m.s.RunFor(5 * time.Second)
		rr.locate(cfg.pick(200, 500))
		m.s.RunFor(25 * time.Second)
	}
	for _, h := range rr.honest {
		rr.res.RoguePointersForged += tap(h).Stats.PointersForged
		rr.res.RogueRemovesRefused += tap(h).Stats.RemovesRefused
	}
	if rr.res.RogueLocates > 0 {
		rr.res.RogueShare = float64(rr.res.RogueFound) / float64(rr.res.RogueLocates)
	}
	logf(cfg.Log, "sim tapestry rogue: %d of %d locates found the real server", rr.res.RogueFound, rr.res.RogueLocates)
	res.check("rogue_found_share", rr.res.RogueShare, ">= 0.99", rr.res.RogueShare >= 0.99)
	res.check("rogue_listed_forged", float64(rr.res.RogueListedForged), "= 0", rr.res.RogueListedForged == 0)
	res.check("rogue_nobody_found", float64(rr.res.RogueNobodyFound), "= 0", rr.res.RogueNobodyFound == 0)
	return nil
}

// lie has every rogue send 16 random honest nodes a batch of lies.
func (rr *rogueRun) lie() {
	m := rr.m
	nowhere := wire.NodeRef{ID: id.Random(m.r, id.Bytes), Addr: "nowhere"}
	for _, rogue := range rr.rogues {
		var batch []wire.TapPointer
		for range 8 {
			k := rr.objects[m.r.IntN(len(rr.objects))]
			other := tap(rr.honest[m.r.IntN(len(rr.honest))]).Self()
			if other.Addr == m.objects[k].Addr {
				continue
			}
			batch = append(batch,
				wire.TapPointer{Key: k, App: tapestry.AppDOLR, Server: other, TTLMillis: 3_600_000},
				wire.TapPointer{Key: k, App: tapestry.AppDOLR, Server: nowhere, TTLMillis: 3_600_000},
				wire.TapPointer{Key: id.Random(m.r, id.Bytes), App: tapestry.AppDOLR, Server: other, TTLMillis: 3_600_000},
				wire.TapPointer{Key: k, App: tapestry.AppDOLR, Server: tap(m.objects[k]).Self(), Remove: true})
		}
		for range 16 {
			to := rr.honest[m.r.IntN(len(rr.honest))]
			if !to.Up() {
				continue
			}
			rr.res.RogueForgedSent += len(batch) * 3 / 4
			rr.res.RogueRemovesSent += len(batch) / 4
			from := tap(rogue)
			m.s.Do(rogue, func(env node.Env) {
				from.Host().Call(env, to.Addr, from.Self(), tap(to).Self().ID, &wire.TapPointers{Pointers: slices.Clone(batch)}, 0,
					func(node.Env, wire.Msg, error) {})
			})
		}
	}
}

// locate routes count paced locates of real objects from random honest
// nodes, a tenth as many of keys nobody serves, and a tenth as many
// LocateAll, and runs until they end.
func (rr *rogueRun) locate(count int) {
	m := rr.m
	for i := range count {
		client := rr.honest[m.r.IntN(len(rr.honest))]
		k := rr.objects[m.r.IntN(len(rr.objects))]
		server := m.objects[k]
		switch {
		case i%10 == 0:
			nobody := id.Random(m.r, id.Bytes)
			m.s.DoAt(client, m.paced(), func(env node.Env) {
				tap(client).RouteToObject(env, nobody, tapestry.AppDOLR, nil, func(env node.Env, o tapestry.Outcome) {
					rr.res.RogueNobodyLocates++
					if o.Status == wire.TapDelivered {
						rr.res.RogueNobodyFound++
					}
				})
			})
		case i%10 == 1:
			m.s.DoAt(client, m.paced(), func(env node.Env) {
				tap(client).LocateAll(env, k, func(env node.Env, o tapestry.Outcome) {
					rr.res.RogueLists++
					for _, s := range o.Servers {
						if s.Addr != server.Addr {
							rr.res.RogueListedForged++
						}
					}
				})
			})
		default:
			m.s.DoAt(client, m.paced(), func(env node.Env) {
				tap(client).RouteToObject(env, k, tapestry.AppDOLR, nil, func(env node.Env, o tapestry.Outcome) {
					rr.res.RogueLocates++
					if o.Err == nil && o.Status == wire.TapDelivered && o.Node.Addr == server.Addr {
						rr.res.RogueFound++
					}
				})
			})
		}
	}
	m.drain()
}

func (r TapestryRogue) writeText(w io.Writer) {
	if r.RogueNodes == 0 {
		return
	}
	fmt.Fprintf(w, "rogue: %d nodes, %d of them insiders lying about %d objects: %d forged pointers and %d removals of real ones sent\n",
		r.RogueNodes, r.RogueInsiders, r.RogueObjects, r.RogueForgedSent, r.RogueRemovesSent)
	fmt.Fprintf(w, "rogue: locates from honest nodes: %d of %d found the real server (%.4f); %d of %d of keys nobody serves ended found; %d locate --all named %d forged servers\n",
		r.RogueFound, r.RogueLocates, r.RogueShare, r.RogueNobodyFound, r.RogueNobodyLocates, r.RogueLists, r.RogueListedForged)
	fmt.Fprintf(w, "rogue: the honest nodes dropped %d forged pointers (their server said no) and refused %d removals\n",
		r.RoguePointersForged, r.RogueRemovesRefused)
}
