package d2

import (
	"triad/internal/node"
	"triad/internal/store"
)

// StoreName is the engine D2 keeps its blocks in, beside the host's own
// (node.Storage.Store): the tcp driver opens it under DATA/d2 when
// configured with it (tcp.Config.Stores), the simulator on first use.
const StoreName = "d2"

// EngineOf is the engine of D2's blocks in st (KeyBytes-byte keys), or
// nil when the driver keeps none.
func EngineOf(st node.Storage) store.Engine {
	e, err := st.Store(StoreName, KeyBytes)
	if err != nil {
		return nil
	}
	return e
}
