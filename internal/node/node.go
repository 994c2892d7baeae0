package node

import (
	"math/rand/v2"
	"time"

	"triad/internal/store"
	"triad/internal/wire"
)

// Addr is a process's network address ("host:port" in the tcp driver, a
// host name in the simulator). Virtual servers of one process share it.
type Addr = string

// Env is a node's only window on the world. Drivers implement it; a node
// must not keep it after Handle returns.
type Env interface {
	// Now is the current time: virtual in the simulator.
	Now() time.Time
	// Rand is this process's random source, seeded by the driver.
	Rand() *rand.Rand
	// Send queues e for delivery to the process at to. Delivery is
	// asynchronous and may fail silently; messages may be lost or
	// reordered. The driver encodes or copies e before Send returns, so the
	// node may change the slices it sent afterwards.
	Send(to Addr, e wire.Envelope)
	// After arranges for Handle(TimerFired{t}) after d. cancel stops it if it
	// has not fired yet.
	After(d time.Duration, t Timer) (cancel func())
	// Offload runs w away from the event loop (disk I/O, hashing); its result
	// comes back as Handle(WorkDone{...}).
	Offload(w Work)
}

// Handler is a process's state machine. Handle applies one event. It never
// blocks, starts goroutines, or keeps env or ev after it returns.
type Handler interface {
	Handle(env Env, ev Event)
}

// Event is one input to a node: Start, MsgIn, TimerFired, WorkDone, Request
// or Stop.
type Event interface{ isEvent() }

// Start is the first event a process receives after it is created or
// restarted.
type Start struct{}

// MsgIn is an envelope that arrived from From (a process address). For
// messages from clients that have no listen address the driver supplies a
// reply address that routes back over the client's connection.
type MsgIn struct {
	From Addr
	Env  wire.Envelope
	// Local says the message came from a link in the node's own process
	// (tcp.Local: a news front-end embedding its node), not from the
	// network. Only the driver sets it; nothing a sender writes does.
	Local bool
	// Client names the client a request on an accepted connection came
	// from, as the driver knows it: "cert NAME@SITE" for a certificate
	// (TLS), else "ip ADDRESS". Empty for a node's message, a link in the
	// process and the simulator's. A protocol that counts what a client
	// may do (a name quota) counts by it.
	Client string
}

// Timer is a typed timer value: drivers hand it back in TimerFired. Being a
// value rather than a closure lets the simulator and tests list and print
// what is pending.
type Timer interface{ String() string }

// TimerFired reports that a timer set with After has expired.
type TimerFired struct{ T Timer }

// Work is a unit of blocking work that runs off the event loop: a typed
// value saying what to read or write (or compute), which the driver runs
// against the host's storage and answers with WorkDone. Run must not touch
// the node's state.
type Work interface {
	Run(s Storage) (result any, err error)
}

// WorkDone carries the result of offloaded work back to the node.
type WorkDone struct {
	W      Work
	Result any
	Err    error
}

// Stop asks a process to shut down gracefully (tell its neighbours it is
// leaving, save its state). The driver then flushes what was sent, for a
// bounded time, and delivers nothing more.
type Stop struct{}

// Request runs Fn inside the node's event loop. Local blocking APIs (a Go
// client, a command, a simulation experiment) use it to call the node's
// methods; Fn must follow Handle's rules.
type Request struct{ Fn func(env Env) }

func (Request) isEvent()    {}
func (Start) isEvent()      {}
func (MsgIn) isEvent()      {}
func (TimerFired) isEvent() {}
func (WorkDone) isEvent()   {}
func (Stop) isEvent()       {}

// Disk is the small persistent store of a host's own state: whole named
// files written atomically. The tcp driver backs it with the data folder;
// the simulator with memory that survives a crash but not a wiped disk.
type Disk interface {
	WriteFile(name string, data []byte) error
	ReadFile(name string) ([]byte, error)
}

// Metric is one figure a protocol reports about itself, for the metrics
// page (triad_PROTOCOL_NAME, and NAME_total for a counter): a counter
// counts events since the process started, a gauge is a value now. A
// protocol with figures of its own has a method Metrics() []Metric, which
// the daemon's metrics call on its event loop; so the metrics name no
// protocol's fields.
type Metric struct {
	Name  string // lower case with underscores, without the protocol's prefix
	Help  string
	Gauge bool
	Value float64
}

// Storage is what a driver keeps for a host across restarts and hands to
// offloaded work: its small state files and its storage engine. The driver
// owns it: the tcp driver opens it under the data folder, the simulator
// keeps it across a crash and restart and throws it away only when the
// host's disk fails.
type Storage interface {
	Disk
	// Engine is the host's object store, shared by its virtual servers.
	Engine() store.Engine
	// Store is the engine called name, beside Engine, that a protocol
	// keeps its own records in (a protocol whose keys are not 20 bytes), with
	// keys of keyWidth bytes. The driver keeps the ones it was configured
	// with (tcp.Config.Stores) and the simulator makes them on first use;
	// a store the driver does not keep, or of another key width, is an
	// error. The driver, not the protocol, closes it.
	Store(name string, keyWidth int) (store.Engine, error)
}
