package ring

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"strconv"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// StateFile is the name of a host's persisted state on its node.Disk.
const StateFile = "ring-state.json"

// maxSavedPeers bounds the peers written to (and read from) the state file.
const maxSavedPeers = 256

// State is what a host keeps across restarts: its vnode IDs, which fix its
// ring positions, its machine identity (wire.NodeRef.Machine), and the
// peers it last knew, which let it rejoin without a bootstrap address.
type State struct {
	IDs     []id.ID
	Machine uint64
	Peers   []wire.NodeRef
}

type stateJSON struct {
	Version int        `json:"version"`
	IDs     []string   `json:"ids"`
	Machine string     `json:"machine,omitempty"` // 16 hex digits
	Peers   []peerJSON `json:"peers"`
}

type peerJSON struct {
	ID      string `json:"id"`
	Addr    string `json:"addr"`
	Machine string `json:"machine,omitempty"`
}

func machineHex(m uint64) string {
	if m == 0 {
		return ""
	}
	return fmt.Sprintf("%016x", m)
}

func parseMachine(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	if len(s) != 16 {
		return 0, fmt.Errorf("machine %q is not 16 hex digits", s)
	}
	return strconv.ParseUint(s, 16, 64)
}

// MarshalState encodes s for the state file.
func MarshalState(s State) ([]byte, error) {
	j := stateJSON{Version: 1, Machine: machineHex(s.Machine)}
	for _, x := range s.IDs {
		j.IDs = append(j.IDs, x.String())
	}
	for _, p := range s.Peers {
		j.Peers = append(j.Peers, peerJSON{ID: p.ID.String(), Addr: p.Addr, Machine: machineHex(p.Machine)})
	}
	return json.MarshalIndent(j, "", "  ")
}

// UnmarshalState decodes and validates a state file.
func UnmarshalState(b []byte) (State, error) {
	var j stateJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return State{}, fmt.Errorf("ring: state file: %w", err)
	}
	if j.Version != 1 {
		return State{}, fmt.Errorf("ring: state file version %d not supported", j.Version)
	}
	if len(j.IDs) == 0 || len(j.IDs) > wire.MaxVnodes {
		return State{}, fmt.Errorf("ring: state file has %d ids", len(j.IDs))
	}
	var s State
	m, err := parseMachine(j.Machine)
	if err != nil {
		return State{}, fmt.Errorf("ring: state file: %w", err)
	}
	s.Machine = m
	for _, h := range j.IDs {
		x, err := id.Parse(h, id.Bytes)
		if err != nil || len(h) != 2*id.Bytes {
			return State{}, fmt.Errorf("ring: state file: bad id %q", h)
		}
		s.IDs = append(s.IDs, x)
	}
	for i, p := range j.Peers {
		if i == maxSavedPeers {
			break
		}
		x, err := id.Parse(p.ID, id.Bytes)
		m, merr := parseMachine(p.Machine)
		if err != nil || merr != nil || len(p.ID) != 2*id.Bytes || p.Addr == "" || len(p.Addr) > wire.MaxAddrBytes {
			continue // one bad peer does not cost the rest
		}
		s.Peers = append(s.Peers, wire.NodeRef{ID: x, Addr: p.Addr, Machine: m})
	}
	return s, nil
}

// LoadState reads a host's state from d, or creates one with vnodes fresh
// random IDs and a random machine identity (and saves it) when there is
// none; a state saved before machine identities gets one. A state with a different
// number of vnodes keeps its IDs and adds or drops IDs at the end.
// deploy.New calls it before it creates the ring protocol.
func LoadState(d node.Disk, r *rand.Rand, vnodes int) (State, error) {
	if vnodes < 1 || vnodes > wire.MaxVnodes {
		return State{}, fmt.Errorf("ring: %d vnodes not in [1, %d]", vnodes, wire.MaxVnodes)
	}
	var s State
	b, err := d.ReadFile(StateFile)
	switch {
	case err == nil:
		if s, err = UnmarshalState(b); err != nil {
			return State{}, err
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return State{}, err
	}
	changed := len(s.IDs) != vnodes || s.Machine == 0
	for len(s.IDs) < vnodes {
		s.IDs = append(s.IDs, id.Random(r, id.Bytes))
	}
	for s.Machine == 0 {
		s.Machine = r.Uint64() // made once, with the first state
	}
	s.IDs = s.IDs[:vnodes]
	if changed {
		b, err := MarshalState(s)
		if err != nil {
			return State{}, err
		}
		if err := d.WriteFile(StateFile, b); err != nil {
			return State{}, err
		}
	}
	return s, nil
}

// SeedIDs makes a host that has no state yet start at the ring positions
// ids (tests and simulations that place hosts on purpose). A host that has
// a state keeps it.
func SeedIDs(d node.Disk, ids []id.ID) error {
	if _, err := d.ReadFile(StateFile); !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	b, err := MarshalState(State{IDs: ids})
	if err != nil {
		return err
	}
	return d.WriteFile(StateFile, b)
}

// saveWork writes an encoded state off the event loop.
type saveWork struct{ data []byte }

func (w saveWork) Run(s node.Storage) (any, error) {
	return nil, s.WriteFile(StateFile, w.data)
}
