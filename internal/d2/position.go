package d2

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"strings"

	"triad/internal/id"
	"triad/internal/node"
)

// PositionFile is where a host keeps its D2 position across restarts.
const PositionFile = "d2-position"

// LoadPosition reads the position an earlier run saved or, the first
// time, draws a random one from r. D2's positions move to balance load
// (§6), so unlike ring IDs they cannot be derived from the address.
func LoadPosition(d node.Disk, r *rand.Rand) (id.ID, error) {
	b, err := d.ReadFile(PositionFile)
	if errors.Is(err, fs.ErrNotExist) {
		return id.Random(r, KeyBytes), nil
	}
	if err != nil {
		return id.ID{}, err
	}
	return decodePosition(b)
}

// The position file: a comment line, the position in hex, and (format
// 2) "held-from" and the low end of the replica range the node last held
// (doubt.go). A reader of format 1 takes the first line and ignores the
// rest.
func encodePosition(pos id.ID, held *id.ID) []byte {
	if held == nil {
		return []byte("# triad d2 position v1\n" + pos.String() + "\n")
	}
	return []byte("# triad d2 position v2\n" + pos.String() + "\nheld-from " + held.String() + "\n")
}

func decodePosition(b []byte) (id.ID, error) {
	pos, _, err := decodePositionFile(b)
	return pos, err
}

// decodePositionFile reads a position file: the position, and the held
// range's low end if the file names one.
func decodePositionFile(b []byte) (pos id.ID, held *id.ID, err error) {
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		text, isHeld := strings.CutPrefix(line, "held-from ")
		if found != isHeld {
			return id.ID{}, nil, fmt.Errorf("d2: %s: unexpected line %q", PositionFile, line)
		}
		raw, err := hex.DecodeString(text)
		if err != nil || len(raw) != KeyBytes {
			return id.ID{}, nil, fmt.Errorf("d2: %s: not a %d-byte position in hex: %q", PositionFile, KeyBytes, line)
		}
		v, err := id.FromBytes(raw)
		if err != nil {
			return id.ID{}, nil, err
		}
		if isHeld {
			return pos, &v, nil
		}
		pos, found = v, true
	}
	if !found {
		return id.ID{}, nil, fmt.Errorf("d2: %s holds no position", PositionFile)
	}
	return pos, nil, nil
}

// loadHeld reads the replica range's low end an earlier run saved, if it
// saved one for the position pos (a file of another position, or none,
// gives none).
func loadHeld(d node.Disk, pos id.ID) (id.ID, bool) {
	b, err := d.ReadFile(PositionFile)
	if err != nil {
		return id.ID{}, false
	}
	p, held, err := decodePositionFile(b)
	if err != nil || held == nil || p != pos {
		return id.ID{}, false
	}
	return *held, true
}

// savePositionWork writes the node's position off the event loop.
type savePositionWork struct{ data []byte }

func (w *savePositionWork) Run(s node.Storage) (any, error) {
	return nil, s.WriteFile(PositionFile, w.data)
}
