package fsadmin

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"triad/internal/d2/key"
	"triad/internal/d2client"
	"triad/internal/d2fs"
)

// Status is a volume as its nodes hold it, and the --addr nodes' D2:
// what triad fs status prints, as text (Print) or JSON.
type Status struct {
	Volume       string            `json:"volume,omitempty"`
	Name         string            `json:"name,omitempty"`
	Commit       uint32            `json:"commit,omitempty"`
	Committed    *time.Time        `json:"committed,omitempty"` // nil: a superblock of the older format
	AgeSeconds   *float64          `json:"age_seconds,omitempty"`
	UsedBytes    *uint64           `json:"used_bytes,omitempty"` // nil: not recorded (older format)
	Lease        *Lease            `json:"lease,omitempty"`
	SuperHolders []Holder          `json:"superblock_holders,omitempty"`
	LeaseHolders []Holder          `json:"lease_holders,omitempty"`
	HoldersError map[string]string `json:"holders_error,omitempty"`
	Nodes        []Node            `json:"nodes"`
	Error        string            `json:"error,omitempty"`
}

// Lease is the writer lease as stored.
type Lease struct {
	State  string     `json:"state"` // live, lapsed, released, none or malformed
	Holder string     `json:"holder,omitempty"`
	Expiry *time.Time `json:"expiry,omitempty"`
	// Left is how long the lease had to run when it was read (negative:
	// lapsed that long ago); the holders and nodes asked after it may
	// take seconds, so it is not measured at printing.
	Left *float64 `json:"left_seconds,omitempty"`
	Why  string   `json:"why,omitempty"` // a malformed lease's error
}

// Holder is one holder of a block and what it answered.
type Holder struct {
	Node  string `json:"node"`
	State string `json:"state"`
}

// Node is one --addr node's D2.
type Node struct {
	Addr          string `json:"addr"`
	D2            string `json:"d2"` // joined, joining, no d2, or no answer
	UsageBytes    uint64 `json:"usage_bytes,omitempty"`
	CapacityBytes uint64 `json:"capacity_bytes,omitempty"` // 0: no bound
	Replicas      uint32 `json:"replicas,omitempty"`
	// Distrusted are the replica partners this node found lacking blocks
	// they had acknowledged (issue 44's possession audits).
	Distrusted []string `json:"distrusted,omitempty"`
	Error      string   `json:"error,omitempty"`
}

// JoiningHint says what a node whose D2 is not on the ring waits for
// (internal/d2's ring.go: the cold start).
const JoiningHint = "it waits for a saved peer that is on the ring to join through, or, after a cold start " +
	"(every node down at once), founds the ring again once the saved peers it reaches all wait too; " +
	"while it reaches none of them it keeps waiting"

// Read fills st with volume arg's commit, lease and holders.
func (st *Status) Read(ctx context.Context, b *d2client.Blocks, arg string) error {
	v, err := Resolve(ctx, b, arg)
	if err != nil {
		return err
	}
	st.Volume = v.String()
	if arg != st.Volume {
		st.Name = arg
	}
	now := time.Now()
	s, err := d2fs.ReadStatus(ctx, b, v, now)
	if err != nil {
		return fmt.Errorf("volume %s: %w", arg, err)
	}
	st.Commit = s.Gen
	if !s.OldFormat {
		age := now.Sub(s.Committed).Seconds()
		st.Committed, st.AgeSeconds, st.UsedBytes = &s.Committed, &age, &s.Used
	}
	l := leaseOf(s.Lease, now)
	st.Lease = &l
	st.HoldersError = map[string]string{}
	st.SuperHolders = holdersOf(ctx, b, s.SuperKey, s.SuperSum, "superblock", st.HoldersError)
	if s.Lease.Found {
		st.LeaseHolders = holdersOf(ctx, b, s.Lease.Key, s.Lease.Sum, "lease", st.HoldersError)
	}
	if len(st.HoldersError) == 0 {
		st.HoldersError = nil
	}
	return nil
}

// leaseOf is l as Status reports it; now is when it was read.
func leaseOf(l d2fs.LeaseStatus, now time.Time) Lease {
	switch {
	case !l.Found:
		return Lease{State: "none"}
	case l.Bad != "":
		return Lease{State: "malformed", Why: l.Bad}
	case l.Expiry.IsZero():
		return Lease{State: "released", Holder: hex.EncodeToString(l.Holder[:])}
	}
	left := l.Expiry.Sub(now).Seconds()
	out := Lease{State: "lapsed", Holder: hex.EncodeToString(l.Holder[:]), Expiry: &l.Expiry, Left: &left}
	if l.Live {
		out.State = "live"
	}
	return out
}

// holdersOf asks which nodes hold k; a failure goes to errs under what.
func holdersOf(ctx context.Context, b *d2client.Blocks, k key.Key, sum [32]byte, what string, errs map[string]string) []Holder {
	hs, err := b.Holders(ctx, k, sum)
	if err != nil {
		errs[what] = err.Error()
		return nil
	}
	out := make([]Holder, len(hs))
	for i, h := range hs {
		out[i] = Holder{Node: h.Node.Node.Addr, State: h.State.String()}
	}
	return out
}

// NodeStates asks each node about its D2 (D2GetSpace), all at once.
func NodeStates(ctx context.Context, b *d2client.Blocks, addrs []string) []Node {
	out := make([]Node, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = nodeState(ctx, b, a)
		}()
	}
	wg.Wait()
	return out
}

func nodeState(ctx context.Context, b *d2client.Blocks, addr string) Node {
	s, err := b.Space(ctx, addr)
	n := Node{Addr: addr, D2: "joined", UsageBytes: s.Usage, CapacityBytes: s.Capacity, Replicas: s.Replicas, Distrusted: s.Distrusted}
	switch {
	case errors.Is(err, d2client.ErrNoD2):
		return Node{Addr: addr, D2: "no d2", Error: err.Error()}
	case err != nil:
		return Node{Addr: addr, D2: "no answer", Error: err.Error()}
	case !s.Joined:
		n.D2 = "joining"
	}
	return n
}

// Print writes st as text.
func (st *Status) Print(w io.Writer) {
	if st.Volume != "" {
		st.printVolume(w)
	}
	for _, n := range st.Nodes {
		fmt.Fprintf(w, "node %s: %s\n", n.Addr, nodeText(n))
	}
	if st.Volume != "" {
		fmt.Fprintln(w, "(changes a mount has not committed are in no block yet: see the mount's log)")
	}
}

func (st *Status) printVolume(w io.Writer) {
	name := st.Volume
	if st.Name != "" {
		name = st.Name + " (" + st.Volume + ")"
	}
	fmt.Fprintf(w, "volume %s\n", name)
	if st.Committed != nil {
		fmt.Fprintf(w, "commit %d, %v ago (%s by the writer's clock)\n", st.Commit,
			(time.Duration(*st.AgeSeconds * float64(time.Second))).Round(100*time.Millisecond), st.Committed.UTC().Format(time.RFC3339))
		fmt.Fprintf(w, "used %s in files\n", BytesText(*st.UsedBytes))
	} else {
		fmt.Fprintf(w, "commit %d (a superblock of the older format: no time, no bytes used)\n", st.Commit)
	}
	l := *st.Lease
	switch l.State {
	case "live", "lapsed":
		left := time.Duration(*l.Left * float64(time.Second)).Round(time.Second)
		when := fmt.Sprintf("%v left", left)
		if *l.Left < 0 {
			when = fmt.Sprintf("%v ago", -left)
		}
		fmt.Fprintf(w, "lease %s: held by mount %s until %s (%s)\n", l.State, l.Holder, l.Expiry.UTC().Format(time.RFC3339), when)
	case "released":
		fmt.Fprintf(w, "lease released by mount %s (a clean unmount): no writer\n", l.Holder)
	case "none":
		fmt.Fprintln(w, "lease none: no writer ever held it")
	default:
		fmt.Fprintf(w, "lease %s: %s\n", l.State, l.Why)
	}
	fmt.Fprintf(w, "superblock %d held by: %s\n", st.Commit, holdersText(st.SuperHolders, st.HoldersError["superblock"]))
	if l.State != "none" {
		fmt.Fprintf(w, "lease held by: %s\n", holdersText(st.LeaseHolders, st.HoldersError["lease"]))
	}
}

func nodeText(n Node) string {
	store := fmt.Sprintf("its D2 store holds %s of %s (r = %d)", BytesText(n.UsageBytes), BytesText(n.CapacityBytes), n.Replicas)
	if n.CapacityBytes == 0 {
		store = fmt.Sprintf("its D2 store holds %s, with no capacity set (--capacity-mb: only its disk limits it) (r = %d)", BytesText(n.UsageBytes), n.Replicas)
	}
	if len(n.Distrusted) > 0 {
		store += fmt.Sprintf("; it distrusts %s: replica partners that acknowledged blocks and did not keep them (possession audits; see docs/d2.md)", strings.Join(n.Distrusted, ", "))
	}
	switch n.D2 {
	case "joined":
		return "D2 on the ring; " + store
	case "joining":
		return "D2 still joining the ring: " + JoiningHint + "; " + store
	}
	return n.D2 + ": " + n.Error
}

func holdersText(hs []Holder, err string) string {
	if err != "" {
		return "unknown: " + err
	}
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = h.Node + " " + h.State
	}
	return strings.Join(parts, ", ")
}

// BytesText is n in bytes, and in KiB, MiB or GiB when it is that large.
func BytesText(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 3 {
		v, i = v/unit, i+1
	}
	return fmt.Sprintf("%d bytes (%.1f %s)", n, v, []string{"KiB", "MiB", "GiB", "TiB"}[i])
}
