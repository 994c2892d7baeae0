package dhash

import (
	"bytes"
	"fmt"

	"github.com/klauspost/reedsolomon"

	"triad/internal/dhash/frag"
	"triad/internal/fault"
	"triad/internal/id"
)

// coder splits blocks into fragments and joins them back. The fragment
// format, and the key of a fragmented block, are package frag's: every
// fragment carries its block's descriptor, which the key is the hash of,
// so a host checks a fragment against its key on its own.
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

// header is the length of a fragment's header under this coding.
func (c *coder) header() int { return frag.HeaderBytes(c.l) }

// split encodes data into l fragments and returns them with the key they
// are stored under, the hash of their descriptor. The same data always
// gives the same fragments and key.
func (c *coder) split(data []byte) (id.ID, [][]byte, error) {
	shards, err := c.enc.Split(data)
	if err != nil {
		return id.ID{}, nil, err
	}
	if err := c.enc.Encode(shards); err != nil {
		return id.ID{}, nil, err
	}
	d := frag.Descriptor{M: c.m, L: c.l, Size: len(data), Block: id.Key(data), Shards: make([]id.ID, c.l)}
	for i, s := range shards {
		d.Shards[i] = id.Key(s)
	}
	frags := make([][]byte, c.l)
	for i, s := range shards {
		frags[i] = frag.Encode(d, i, s)
	}
	return d.Key(), frags, nil
}

// check parses a fragment, verifies it against key (its descriptor hashes
// to key, its shard to the descriptor's entry) and checks that it is of
// this node's coding and of a block no larger than maxBlock. Its errors
// say what is wrong; the caller classifies them (a bad copy when fetched,
// a bad request when offered for storage).
func (c *coder) check(key id.ID, b []byte, maxBlock int) (frag.Fragment, error) {
	f, err := frag.Check(key, b)
	switch {
	case err != nil:
		return frag.Fragment{}, err
	case f.Desc.M != c.m || f.Desc.L != c.l:
		return frag.Fragment{}, fmt.Errorf("fragment of %d-of-%d coding, this node uses %d of %d", f.Desc.M, f.Desc.L, c.m, c.l)
	case f.Desc.Size > maxBlock:
		return frag.Fragment{}, fmt.Errorf("fragment of a %d-byte block, limit %d", f.Desc.Size, maxBlock)
	}
	return f, nil
}

// checkFragment refuses a fragment that does not belong under key. The
// engine cannot tell (a fragment's key is not its hash), so every
// fragment is checked before the engine sees it.
func (c *coder) checkFragment(key id.ID, data []byte, maxBlock int) error {
	if _, err := c.check(key, data, maxBlock); err != nil {
		return fmt.Errorf("%w: not a fragment of %s: %v", fault.ErrBadRequest, key.Short(), err)
	}
	return nil
}

// join rebuilds a block from at least m fragments verified against one
// key (so they share one descriptor), and checks it against the
// descriptor's content hash. Each fragment was checked on its own, so a
// failure here means the putter's fragments were not one block's coding.
func (c *coder) join(frags []frag.Fragment) ([]byte, error) {
	shards := make([][]byte, c.l)
	n := 0
	for _, f := range frags {
		if shards[f.Index] == nil {
			shards[f.Index] = f.Shard
			n++
		}
	}
	if n < c.m {
		return nil, fmt.Errorf("%w: %d distinct fragments, need %d", fault.ErrNotFound, n, c.m)
	}
	if err := c.enc.ReconstructData(shards); err != nil {
		return nil, fmt.Errorf("%w: %v", fault.ErrCorrupt, err)
	}
	d := frags[0].Desc
	var out bytes.Buffer
	out.Grow(d.Size)
	if err := c.enc.Join(&out, shards, d.Size); err != nil {
		return nil, fmt.Errorf("%w: %v", fault.ErrCorrupt, err)
	}
	if id.Key(out.Bytes()) != d.Block {
		return nil, fmt.Errorf("%w: fragments do not rebuild the block their descriptor names", fault.ErrCorrupt)
	}
	return out.Bytes(), nil
}
