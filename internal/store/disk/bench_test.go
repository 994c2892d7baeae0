package disk

import (
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/store"
	"triad/internal/store/storetest"
)

// BenchmarkGet measures reads of 200 KB objects from the page cache: the
// engine's CPU cost per read, checks included.
func BenchmarkGet(b *testing.B) {
	d, err := Open(store.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	r := rand.New(rand.NewPCG(1, 1))
	var keys []id.ID
	for i := 0; i < 200; i++ {
		data, key := storetest.Blob(r, 200_000)
		if err := d.Put(key, data, time.Now().Add(time.Hour), store.PutOptions{NoWait: true}); err != nil {
			b.Fatal(err)
		}
		keys = append(keys, key)
	}
	d.Sync()
	b.SetBytes(200_000)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		var buf []byte
		for pb.Next() {
			var err error
			if buf, _, err = d.GetInto(keys[i%len(keys)], buf); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
