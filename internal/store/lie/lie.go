package lie

import (
	"bytes"
	"fmt"
	"time"

	"triad/internal/id"
	"triad/internal/store"
)

// A Lie is how a Byzantine host's storage misbehaves under the real node
// code, which runs on it unchanged: the host acknowledges what it is
// given and answers every protocol, but its engine does not keep, or does
// not return, the bytes (issue 27).
type Lie int

const (
	// AckAndDrop acknowledges every put and stores nothing: its Merkle
	// tree is honest (empty), so its own maintenance fetches its range
	// again every round, and drops it again.
	AckAndDrop Lie = iota + 1
	// LyingTree acknowledges every put and keeps the key in its Merkle
	// tree and index, but never returns the bytes: its tree tells its
	// neighbours it holds what it does not (a lying TreeInfo).
	LyingTree
	// Forge keeps everything and returns forged bytes: a whole block with
	// its last byte flipped, a fragment with its shard's last byte
	// flipped under its real header.
	Forge
)

func (l Lie) String() string {
	switch l {
	case AckAndDrop:
		return "ack-and-drop"
	case LyingTree:
		return "lying-tree"
	case Forge:
		return "forged"
	}
	return fmt.Sprintf("Lie(%d)", int(l))
}

// Parse is the Lie its String names.
func Parse(name string) (Lie, error) {
	for _, l := range []Lie{AckAndDrop, LyingTree, Forge} {
		if l.String() == name {
			return l, nil
		}
	}
	return 0, fmt.Errorf("lie: no lie %q (want ack-and-drop, lying-tree or forged)", name)
}

// Engine wraps e so that it lies as lie says: what a Byzantine host's
// node code sees. The simulator's liars run on it, and real nodes for
// tests only (`triad node --test-lie`, through tcp.Config.WrapEngine).
func Engine(e store.Engine, lie Lie) store.Engine { return &lyingEngine{Engine: e, lie: lie} }

// lyingEngine is a store.Engine that lies as its Lie says.
type lyingEngine struct {
	store.Engine
	lie Lie
}

func (e *lyingEngine) Put(key id.ID, data []byte, expiry time.Time, opt store.PutOptions) error {
	if e.lie == AckAndDrop {
		return nil
	}
	return e.Engine.Put(key, data, expiry, opt)
}

func (e *lyingEngine) Get(key id.ID) ([]byte, store.Meta, error) {
	data, meta, err := e.Engine.Get(key)
	return e.lieAbout(key, data, meta, err)
}

func (e *lyingEngine) GetInto(key id.ID, buf []byte) ([]byte, store.Meta, error) {
	data, meta, err := e.Engine.Get(key)
	return e.lieAbout(key, data, meta, err)
}

func (e *lyingEngine) lieAbout(key id.ID, data []byte, meta store.Meta, err error) ([]byte, store.Meta, error) {
	switch {
	case err != nil:
		return nil, meta, err
	case e.lie == LyingTree:
		return nil, store.Meta{}, fmt.Errorf("%w: %s (kept in the tree only)", store.ErrNotFound, key.Short())
	case e.lie == Forge && len(data) > 0:
		forged := bytes.Clone(data)
		forged[len(forged)-1] ^= 0xff
		return forged, meta, nil
	}
	return data, meta, nil
}
