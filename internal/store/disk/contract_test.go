package disk

import (
	"testing"

	"triad/internal/store"
	"triad/internal/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.RunContract(t, func(t *testing.T, opt store.Options) store.Engine {
		if opt.Dir == "" {
			opt.Dir = t.TempDir()
		}
		d, err := Open(opt)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	})
}
