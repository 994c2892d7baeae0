package localdeploy

import (
	"testing"

	"triad/internal/newsd"
)

// TestMemoryLimitMB: a limit given is the limit; -1 sums what each node
// and site would have alone.
func TestMemoryLimitMB(t *testing.T) {
	o := DefaultOptions()
	o.Sites, o.Nodes = 3, 2
	site := newsd.DefaultOptions()
	site.MemoryLimitMB = 100
	for _, c := range []struct{ mb, want int }{
		{0, 0},
		{700, 700},
		{-1, 3*2*512 + 3*100},
	} {
		if got := o.MemoryLimitMB(c.mb, 512, site); got != c.want {
			t.Errorf("MemoryLimitMB(%d) = %d, want %d", c.mb, got, c.want)
		}
	}
}
