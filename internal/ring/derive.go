package ring

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// MaxVnodes bounds the vnodes of one host whose IDs are derived from its
// address (VnodeID): a reference to vnode 64 or beyond is refused.
const MaxVnodes = 64

// vnodeTag starts the hashed input of VnodeID, so that no other hash of
// an address in triad gives a vnode's ID.
const vnodeTag = "triad-vnode\x00"

// VnodeID is the ring position of vnode i (0 <= i < MaxVnodes) of the host
// listening at addr: the first 152 bits of SHA-256("triad-vnode\0" ‖ addr
// ‖ 0 ‖ i), then i as the last byte. A host cannot choose where it sits on
// the ring, only its address, which its certificate (or, without TLS, the
// challenge its connection answered) binds; and anyone can check a
// reference {ID, Addr} with one hash (VnodeIndex).
func VnodeID(addr node.Addr, i int) id.ID {
	if i < 0 || i >= MaxVnodes {
		panic(fmt.Sprintf("ring: vnode index %d not in [0, %d)", i, MaxVnodes))
	}
	return vnodeID(addr, byte(i))
}

func vnodeID(addr node.Addr, i byte) id.ID {
	h := sha256.New()
	h.Write([]byte(vnodeTag))
	h.Write([]byte(addr))
	h.Write([]byte{0, i})
	var b [id.Bytes]byte
	copy(b[:], h.Sum(nil))
	b[id.Bytes-1] = i
	x, err := id.FromBytes(b[:])
	if err != nil {
		panic(err) // a fixed, valid width
	}
	return x
}

// VnodeIndex returns the index of the vnode n names if its ID is derived
// from its address (VnodeID(n.Addr, i) == n.ID for some i < MaxVnodes),
// and false otherwise.
func VnodeIndex(n wire.NodeRef) (int, bool) {
	if n.ID.Width() != id.Bytes || n.Addr == "" {
		return 0, false
	}
	i := n.ID.Bytes()[id.Bytes-1]
	if int(i) >= MaxVnodes || vnodeID(n.Addr, i) != n.ID {
		return 0, false
	}
	return int(i), true
}

// slotPosition is the derived position (vnode index) of x as the slot-th
// ID of the host at addr, or false if x is not derived from addr or
// breaks the rule that vnode 0, and only vnode 0, sits in slot 0 (where
// Tapestry and D2 run).
func slotPosition(addr node.Addr, slot int, x id.ID) (int, bool) {
	j, ok := VnodeIndex(wire.NodeRef{ID: x, Addr: addr})
	return j, ok && (slot == 0) == (j == 0)
}

// derived reports whether n's ID is derived from its address.
func derived(n wire.NodeRef) bool {
	_, ok := VnodeIndex(n)
	return ok
}

// LoadDerivedState is LoadState for a host whose IDs are derived from its
// address (Config.VerifyIDs): each of its vnodes sits at VnodeID(addr, i)
// for some i below positions (how many derived positions the host may
// use, at least vnodes), vnode 0 always first (Place chooses the others
// for a new host, and SeedIDs saves them). Saved peers whose IDs are not
// derived are dropped. A saved ID that is not such a position (a random
// ID of a host that ran before IDs were derived, or one beyond positions)
// is replaced by the lowest position the host does not use, and listed in
// moved, so the caller can say once that the host moved; moved is empty
// for a new host or one already derived. The state file is rewritten when
// anything changed.
func LoadDerivedState(d node.Disk, r *rand.Rand, addr node.Addr, vnodes, positions int) (st State, moved []id.ID, err error) {
	if vnodes < 1 || positions < vnodes || positions > MaxVnodes {
		return State{}, nil, fmt.Errorf("ring: %d vnodes among %d positions: want 1 <= vnodes <= positions <= %d (derived IDs)", vnodes, positions, MaxVnodes)
	}
	saved := 0
	switch b, rerr := d.ReadFile(StateFile); {
	case rerr == nil:
		if s, err := UnmarshalState(b); err == nil {
			saved = len(s.IDs)
		}
	case !errors.Is(rerr, fs.ErrNotExist):
		return State{}, nil, rerr
	}
	if st, err = LoadState(d, r, vnodes); err != nil {
		return State{}, nil, err
	}
	used := make([]bool, positions)
	keep := make([]bool, len(st.IDs))
	for i, x := range st.IDs {
		if j, ok := slotPosition(addr, i, x); ok && j < positions && !used[j] {
			used[j], keep[i] = true, true
		}
	}
	changed, next := false, 1
	for i, x := range st.IDs {
		if keep[i] {
			continue
		}
		if i < saved {
			moved = append(moved, x)
		}
		j := 0
		if i > 0 {
			for used[next] {
				next++
			}
			j = next
		}
		used[j], st.IDs[i], changed = true, VnodeID(addr, j), true
	}
	if kept := slices.DeleteFunc(st.Peers, func(p wire.NodeRef) bool { return !derived(p) }); len(kept) != len(st.Peers) {
		st.Peers, changed = kept, true
	}
	if changed {
		b, err := MarshalState(st)
		if err != nil {
			return State{}, nil, err
		}
		if err := d.WriteFile(StateFile, b); err != nil {
			return State{}, nil, err
		}
	}
	return st, moved, nil
}
