package bench

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"triad/internal/dhash"
	"triad/internal/ring"
)

// Floor is the least a put needs, counted from its path (the client's
// request to a node, that node's lookup, a copy to each holder and its
// acknowledgement, the reply), and the unit to weigh its CPU with: one
// loopback TCP round trip, timed in this process.
type Floor struct {
	Replicas int `json:"replicas"` // k copies of a block
	Nodes    int `json:"nodes"`
	InFlight int `json:"in_flight"`
	// LookupLocal: every node's successor list holds the whole ring, so
	// the node a put reaches needs no message to find the holders (the
	// lookup hops measured say whether it sent one).
	LookupLocal bool `json:"lookup_local"`
	// Direct: the client has the node it reaches look the key up and
	// sends the block to the key's first holder (client.DirectMin), so
	// that node answers the lookup and the holder the put.
	Direct bool `json:"direct,omitempty"`
	// NodeFrames is the frames the nodes send for a put, on average over
	// the nodes a put may reach, besides the lookup's; RoundTrips counts
	// them with the client's request, two frames a round trip.
	NodeFrames float64 `json:"node_frames_per_put"`
	RoundTrips float64 `json:"round_trips_per_put"`
	// MinSyncs is the file syncs a put needs when every group commit is
	// shared by all puts in flight; MaxSyncs when none is (k).
	MinSyncs float64 `json:"min_syncs_per_put"`
	MaxSyncs float64 `json:"max_syncs_per_put"`
	// RoundTripCPUMicros and RoundTripWallMicros are one loopback round
	// trip's CPU time (both ends) and wall time.
	RoundTripCPUMicros  float64 `json:"round_trip_cpu_us"`
	RoundTripWallMicros float64 `json:"round_trip_wall_us"`
}

// floorRoundTrips is how many round trips loopbackRoundTrip times.
const floorRoundTrips = 10000

// putFloor counts the least a put of k copies needs from n nodes with
// inFlight puts at once, and times the unit (loopbackRoundTrip).
func putFloor(k, n, inFlight int, direct bool) (*Floor, error) {
	k = min(k, n) // fewer nodes than k cannot take a put at all
	f := &Floor{Replicas: k, Nodes: n, InFlight: inFlight, LookupLocal: n-1 <= ring.DefaultConfig().Succs, Direct: direct}
	// The node a put reaches sends each copy it does not keep itself and
	// is sent its acknowledgement, then answers the client: 2k+1 frames
	// from the nodes, 2 fewer for the k/n of the puts it keeps a copy of.
	f.NodeFrames = float64(2*k+1) - 2*float64(k)/float64(n)
	f.RoundTrips = (f.NodeFrames + 1) / 2
	if direct {
		// The lookup's answer, then the holder's k-1 copies, their
		// acknowledgements and the reply: 2k, whichever node is asked;
		// the client sends two requests.
		f.NodeFrames = float64(2 * k)
		f.RoundTrips = (f.NodeFrames + 2) / 2
	}
	// A holder's group commit syncs once for all the copies waiting: a
	// batch of inFlight puts needs one per node holding any of them.
	f.MinSyncs = float64(min(n, k*inFlight)) / float64(inFlight)
	f.MaxSyncs = float64(k)
	cpu, wall, err := loopbackRoundTrip(floorRoundTrips)
	if err != nil {
		return nil, fmt.Errorf("bench: timing loopback round trips: %w", err)
	}
	f.RoundTripCPUMicros, f.RoundTripWallMicros = float64(cpu.Nanoseconds())/1e3, float64(wall.Nanoseconds())/1e3
	return f, nil
}

// replicasArg is the k that nodes started with args keep: their
// --replicas, or the default.
func replicasArg(args []string) int {
	k := dhash.DefaultConfig().Replicas
	for i, a := range args {
		v, ok := strings.CutPrefix(a, "--replicas=")
		if a == "--replicas" && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if n, err := strconv.Atoi(v); ok && err == nil {
			k = n
		}
	}
	return k
}

// loopbackMsgBytes is the size of the messages loopbackRoundTrip sends.
const loopbackMsgBytes = 8

// loopbackRoundTrip sends n small messages one at a time over a TCP
// connection on 127.0.0.1 and waits for each to come back, both ends in
// this process: the CPU time this process used and the wall time, per
// round trip.
func loopbackRoundTrip(n int) (cpu, wall time.Duration, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer ln.Close()
	echoed := make(chan error, 1)
	go func() { echoed <- echo(ln, n) }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		return 0, 0, err
	}
	msg := make([]byte, loopbackMsgBytes)
	cpu0, t0 := selfCPU(), time.Now()
	for range n {
		if _, err := conn.Write(msg); err != nil {
			return 0, 0, err
		}
		if _, err := io.ReadFull(conn, msg); err != nil {
			return 0, 0, err
		}
	}
	cpu, wall = selfCPU()-cpu0, time.Since(t0)
	if err := <-echoed; err != nil {
		return 0, 0, err
	}
	return cpu / time.Duration(n), wall / time.Duration(n), nil
}

// echo accepts one connection on ln and sends back n messages as they
// come.
func echo(ln net.Listener, n int) error {
	conn, err := ln.Accept()
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		return err
	}
	msg := make([]byte, loopbackMsgBytes)
	for range n {
		if _, err := io.ReadFull(conn, msg); err != nil {
			return err
		}
		if _, err := conn.Write(msg); err != nil {
			return err
		}
	}
	return nil
}

// writeFloor writes what a put needs at least, and the unit, a line for
// each.
func (f *Floor) writeFloor(w io.Writer) {
	k := f.Replicas
	fmt.Fprintf(w, "floor of a put, k=%d copies on %d nodes, %d in flight:\n", k, f.Nodes, f.InFlight)
	lookup := "every node's holds the whole ring here"
	if !f.LookupLocal {
		lookup = fmt.Sprintf("here a list of %d may not", ring.DefaultConfig().Succs)
	}
	if f.Direct {
		fmt.Fprintf(w, "  frames    the client asks a node to look the key up, no frames besides the answer when its successor list holds the key's successor (%s), else 2 a hop; "+
			"it sends the block to the key's first holder, which sends a copy to each other holder and is sent its acknowledgement; the reply. From the nodes 2k = %.0f a put, %.2f round trips with the client's two requests\n",
			lookup, f.NodeFrames, f.RoundTrips)
	} else {
		fmt.Fprintf(w, "  frames    the client's request to a node; its lookup, no frames when its successor list holds the key's k successors (%s), else 2 a hop and 1 for the answer; "+
			"a copy to each other holder, and its acknowledgement; the reply. From the nodes 2k+1 = %d, or 2k-1 = %d when the node reached is a holder (k/N = %.2f of the puts): %.2f a put, %.2f round trips with the request\n",
			lookup, 2*k+1, 2*k-1, float64(k)/float64(f.Nodes), f.NodeFrames, f.RoundTrips)
	}
	fmt.Fprintf(w, "  syncs     each copy durable before it is acknowledged, one fdatasync of its holder's group commit for all the copies waiting: at least min(N, kC)/C = %.2f a put (a commit per node for each batch of C puts), at most k = %d\n",
		f.MinSyncs, k)
	fmt.Fprintln(w, "  syscalls  a frame sent is a write-like one (frames queued together share one); a frame received a read-like one (frames arriving together share one), and one more that finds nothing when the connection was idle (Go's reader then waits on the poller); a holder writes its copy with a write-like one; fdatasyncs are neither")
	fmt.Fprintf(w, "  unit      one loopback TCP round trip, %d bytes each way, %d in turn, both ends in this process: %.1f µs CPU, %.1f µs wall; the %.2f round trips of a put, at least %.0f µs CPU\n",
		loopbackMsgBytes, floorRoundTrips, f.RoundTripCPUMicros, f.RoundTripWallMicros, f.RoundTrips, f.RoundTrips*f.RoundTripCPUMicros)
}
