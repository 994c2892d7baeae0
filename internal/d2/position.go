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

func encodePosition(pos id.ID) []byte {
	return []byte("# triad d2 position v1\n" + pos.String() + "\n")
}

func decodePosition(b []byte) (id.ID, error) {
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		raw, err := hex.DecodeString(line)
		if err != nil || len(raw) != KeyBytes {
			return id.ID{}, fmt.Errorf("d2: %s: not a %d-byte position in hex: %q", PositionFile, KeyBytes, line)
		}
		return id.FromBytes(raw)
	}
	return id.ID{}, fmt.Errorf("d2: %s holds no position", PositionFile)
}

// savePositionWork writes the node's position off the event loop.
type savePositionWork struct{ data []byte }

func (w *savePositionWork) Run(s node.Storage) (any, error) {
	return nil, s.WriteFile(PositionFile, w.data)
}
