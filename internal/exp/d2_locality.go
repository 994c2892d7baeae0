package exp

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"slices"
	"time"

	"triad/internal/d2/key"
	"triad/internal/d2/workload"
)

// d2Locality is Fig. 2's analysis on the synthetic workload: the nodes
// each user meets per hour when every node stores nodeBytes, for three
// placements of the same blocks (§4).
type d2Locality struct {
	Users       int     `json:"users"`
	Nodes       int     `json:"nodes"`
	UserHours   int     `json:"user_hours"`
	Traditional float64 `json:"traditional"` // block keys hashed uniformly over the nodes
	Ordered     float64 `json:"ordered"`     // D2 keys, nodes cut at equal loads along the sorted keys
	LowerBound  float64 `json:"lower_bound"` // blocks accessed per user-hour over blocks per node, rounded up
}

// d2LocalityVolume is one user's blocks: every block that exists at the
// start or is written during the trace, in key order, with their bytes.
type d2LocalityVolume struct {
	keys   []key.Key
	before []int64 // bytes of the volume before each key
	bytes  int64
}

func localityVolume(m *workload.Manifest, cfg workload.Config, u int) (d2LocalityVolume, []workload.Access) {
	us := workload.NewUser(m, cfg, u)
	fs := us.FS()
	size := map[key.Key]int32{}
	for i := range fs.Nodes {
		for b := range fs.Blocks(i) {
			size[fs.BlockKey(i, b)] = fs.BlockBytesOf(i, b)
		}
	}
	var trace []workload.Access
	for a, ok := us.Next(); ok; a, ok = us.Next() {
		if a.Op == workload.Write {
			size[a.Key] = a.Bytes
		}
		if a.Op != workload.Delete {
			trace = append(trace, a)
		}
	}
	v := d2LocalityVolume{keys: make([]key.Key, 0, len(size))}
	for k := range size {
		v.keys = append(v.keys, k)
	}
	slices.SortFunc(v.keys, func(a, b key.Key) int { return bytes.Compare(a[:], b[:]) })
	v.before = make([]int64, len(v.keys))
	for i, k := range v.keys {
		v.before[i] = v.bytes
		v.bytes += int64(size[k])
	}
	return v, trace
}

// runD2Locality measures the three placements. Users' volumes sit on the
// ring in the order of their IDs; a pass over every user finds the
// volumes' sizes, a second the nodes each user-hour meets.
func runD2Locality(m *workload.Manifest, cfg workload.Config, nodeBytes int64) d2Locality {
	type vol struct {
		id            key.Volume
		bytes, blocks int64
	}
	vols := make([]vol, cfg.Users)
	var total, blocks int64
	for u := range cfg.Users {
		v, _ := localityVolume(m, cfg, u)
		vols[u] = vol{id: workload.VolumeFor(cfg.Seed, u), bytes: v.bytes, blocks: int64(len(v.keys))}
		total += v.bytes
		blocks += int64(len(v.keys))
	}
	order := make([]int, cfg.Users)
	for u := range order {
		order[u] = u
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(vols[a].id[:], vols[b].id[:]) })
	start := make([]int64, cfg.Users)
	var at int64
	for _, u := range order {
		start[u] = at
		at += vols[u].bytes
	}
	res := d2Locality{Users: cfg.Users, Nodes: int((total + nodeBytes - 1) / nodeBytes)}
	perNode := float64(blocks) / float64(res.Nodes)
	var trad, ord, bound float64
	for u := range cfg.Users {
		v, trace := localityVolume(m, cfg, u)
		type hour struct{ trad, ord, blocks map[int64]bool }
		hours := map[time.Duration]*hour{}
		for _, a := range trace {
			h := hours[a.At/time.Hour]
			if h == nil {
				h = &hour{trad: map[int64]bool{}, ord: map[int64]bool{}, blocks: map[int64]bool{}}
				hours[a.At/time.Hour] = h
			}
			i, _ := slices.BinarySearchFunc(v.keys, a.Key, func(k, x key.Key) int { return bytes.Compare(k[:], x[:]) })
			h.blocks[int64(i)] = true
			h.ord[(start[u]+v.before[i])/nodeBytes] = true
			sum := sha256.Sum256(a.Key[:])
			h.trad[int64(binary.BigEndian.Uint64(sum[:])%uint64(res.Nodes))] = true
		}
		for _, h := range hours {
			res.UserHours++
			trad += float64(len(h.trad))
			ord += float64(len(h.ord))
			bound += math.Ceil(float64(len(h.blocks)) / perNode)
		}
	}
	if res.UserHours > 0 {
		n := float64(res.UserHours)
		res.Traditional, res.Ordered, res.LowerBound = trad/n, ord/n, bound/n
	}
	return res
}
