package mem

import (
	"testing"

	"triad/internal/store"
	"triad/internal/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.RunContract(t, func(t *testing.T, opt store.Options) store.Engine { return New(opt) })
}
