package sim

import (
	"triad/internal/node"
	"triad/internal/store"
	"triad/internal/store/lie"
)

// A Lie is how a Byzantine host's storage misbehaves (package lie).
type Lie = lie.Lie

// The lies (package lie).
const (
	AckAndDrop = lie.AckAndDrop
	LyingTree  = lie.LyingTree
	Forge      = lie.Forge
)

// view is the storage h's node code sees: its own, or a lying view of it.
func (h *Host) view() node.Storage {
	if h.Lie == 0 {
		return h.storage
	}
	return lyingStorage{Storage: h.storage, engine: lie.Engine(h.storage.engine, h.Lie)}
}

type lyingStorage struct {
	node.Storage
	engine store.Engine
}

func (s lyingStorage) Engine() store.Engine { return s.engine }
