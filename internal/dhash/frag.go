package dhash

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/klauspost/reedsolomon"

	"triad/internal/id"
)

// A fragment is a header and one Reed-Solomon shard. The header makes a
// fragment self-describing, so that a reader needs no metadata beyond the
// key, and a host can check a fragment against the key it is stored under:
// version, shard index, m, l, the block's length (8 bytes, little-endian)
// and the block's key.
const (
	fragVersion = 2
	fragHeader  = 12 + id.Bytes
)

// coder splits blocks into fragments and joins them back.
type coder struct {
	m, l int
	enc  reedsolomon.Encoder // safe for concurrent use
}

func newCoder(m, l int) (*coder, error) {
	enc, err := reedsolomon.New(m, l-m)
	if err != nil {
		return nil, fmt.Errorf("dhash: %d-of-%d coding: %w", m, l, err)
	}
	return &coder{m: m, l: l, enc: enc}, nil
}

// split encodes data, the block under key, into l fragments, each with its
// header.
func (c *coder) split(key id.ID, data []byte) ([][]byte, error) {
	shards, err := c.enc.Split(data)
	if err != nil {
		return nil, err
	}
	if err := c.enc.Encode(shards); err != nil {
		return nil, err
	}
	frags := make([][]byte, c.l)
	for i, s := range shards {
		f := make([]byte, fragHeader, fragHeader+len(s))
		f[0], f[1], f[2], f[3] = fragVersion, byte(i), byte(c.m), byte(c.l)
		binary.LittleEndian.PutUint64(f[4:], uint64(len(data)))
		copy(f[12:], key.Bytes())
		frags[i] = append(f, s...)
	}
	return frags, nil
}

// fragment is a parsed fragment.
type fragment struct {
	index, m, l int
	size        int
	key         id.ID // the block's
	shard       []byte
}

// parse checks a fragment's header against the coding in use. Its errors
// say what is wrong; the caller classifies them (a damaged copy when
// fetched, a bad request when offered for storage).
func (c *coder) parse(b []byte, maxBlock int) (fragment, error) {
	if len(b) < fragHeader || b[0] != fragVersion {
		return fragment{}, fmt.Errorf("bad fragment header")
	}
	f := fragment{index: int(b[1]), m: int(b[2]), l: int(b[3]), shard: b[fragHeader:]}
	size := binary.LittleEndian.Uint64(b[4:])
	if f.m != c.m || f.l != c.l || f.index >= f.l {
		return fragment{}, fmt.Errorf("fragment %d of %d-of-%d coding, this node uses %d of %d", f.index, f.m, f.l, c.m, c.l)
	}
	if size == 0 || size > uint64(maxBlock) || uint64(len(f.shard)) != (size+uint64(c.m)-1)/uint64(c.m) {
		return fragment{}, fmt.Errorf("fragment of %d bytes for a %d-byte block", len(f.shard), size)
	}
	f.size = int(size)
	f.key, _ = id.FromBytes(b[12:fragHeader]) // never fails: id.Bytes bytes
	return f, nil
}

// checkFragment refuses a fragment that does not belong under key: its
// header must parse under this node's coding and name key as its block.
// The engine cannot tell (a fragment's key is not its hash), so every
// fragment is checked before the engine sees it. The shard itself can be
// proved only by rebuilding the block, as a get does.
func (c *coder) checkFragment(key id.ID, data []byte, maxBlock int) error {
	f, err := c.parse(data, maxBlock)
	if err == nil && f.key != key {
		err = fmt.Errorf("it is a fragment of %s", f.key.Short())
	}
	if err != nil {
		return fmt.Errorf("%w: not a fragment of %s: %v", ErrBadRequest, key.Short(), err)
	}
	return nil
}

// join rebuilds a block from at least m fragments of one block. It tries
// all of them first, then (if the result does not match key) every set
// that leaves one out, so that one bad fragment cannot spoil a read.
func (c *coder) join(frags []fragment, ok func([]byte) bool) ([]byte, error) {
	try := func(skip int) ([]byte, error) {
		shards := make([][]byte, c.l)
		size, n := 0, 0
		for i, f := range frags {
			if i == skip || shards[f.index] != nil {
				continue
			}
			if size != 0 && f.size != size {
				return nil, fmt.Errorf("%w: fragments disagree on the block size", ErrCorrupt)
			}
			size = f.size
			shards[f.index] = f.shard
			n++
		}
		if n < c.m {
			return nil, fmt.Errorf("%w: %d distinct fragments, need %d", ErrNotFound, n, c.m)
		}
		if err := c.enc.ReconstructData(shards); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		var out bytes.Buffer
		out.Grow(size)
		if err := c.enc.Join(&out, shards, size); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		return out.Bytes(), nil
	}
	data, err := try(-1)
	if err == nil && ok(data) {
		return data, nil
	}
	if len(frags) > c.m {
		for skip := range frags {
			if d, err := try(skip); err == nil && ok(d) {
				return d, nil
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: fragments do not rebuild a block matching the key", ErrCorrupt)
}
