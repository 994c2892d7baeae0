package d2client

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"triad/internal/client"
	"triad/internal/d2/key"
	"triad/internal/d2fs"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/wire"
)

// Errors of this package (wrapped with %w).
var (
	// ErrNoD2: the node answered, but does not run D2 (started without --d2).
	ErrNoD2 = errors.New("d2client: the node does not run D2 (start it with --d2)")
	// ErrRange: Latest was asked a range that is not a prefix range.
	ErrRange = errors.New("d2client: Latest serves prefix ranges only")
	// ErrNoNode: no node of the list answered.
	ErrNoNode = errors.New("d2client: no node answered")
	// ErrSettling: every node answered, but none could serve the request
	// yet (no route, unavailable, busy): D2's ring is settling after a
	// node started or failed, or a key waits for its holders (d2's
	// doubt). It wraps ErrNoNode; trying again shortly is the remedy.
	ErrSettling = errors.New("d2client: the nodes answered but cannot serve it yet (D2's ring is settling)")
	// ErrJoining: a node runs D2 but D2 there is not on the ring yet (it
	// answered d2.ErrNotJoined): it is joining through a saved peer that
	// is on the ring, or, after a cold start, waits to found the ring
	// again. A *JoiningError names the nodes.
	ErrJoining = errors.New("d2client: D2 is still joining the ring there")
	// ErrNoKey: a put or a delete of a volume whose writer's private key
	// this Blocks was not given (AddKey), or a registry write other than
	// a put if absent: the nodes would refuse it, so it is not sent.
	ErrNoKey = errors.New("d2client: no private key for the volume: only its writer may write its blocks")

	// errMismatch: a gateway returned bytes that do not match the hash
	// asked (it checks too: a broken or lying one); another is asked.
	errMismatch = fmt.Errorf("d2client: the gateway returned bytes that do not match: %w", fault.ErrCorrupt)
)

// Config says which nodes to use and how long to wait for them.
type Config struct {
	// Addrs are the gateways, tried in order from the last one that
	// answered. At least one.
	Addrs []string
	// Options are the connections' (TLS).
	Options client.Options
	// CallTimeout bounds one request to one node, dial included. A
	// gateway relays to the key's owner (5 s per relay), so it should
	// exceed a few of those. Default 15 s; zero means the default.
	CallTimeout time.Duration
	// Passes is how many times a request goes over the whole list before
	// it fails (a lone gateway retried while its ring repairs). Default
	// 5: with the default Backoff, 7.5 s of pauses, as long as D2's ring
	// takes to drop a killed node at one-second stabilization (3 passes
	// gave up after 1.5 s; TestFS, issue 45); zero means the default.
	Passes int
	// Backoff is the pause between passes, doubled after each. Default
	// 500 ms; zero means the default.
	Backoff time.Duration
	// MinCopies is how many replicas a put must reach to count as
	// durable; fewer is retried. Default 2; zero means the default.
	MinCopies int
	// Placement is where blocks go on the ring: PlaceD2, at their keys
	// (the default), or PlaceBlock, at a hash of each key, as a
	// traditional DHT places them (§9's baseline; key.PlaceBlock). A
	// volume is read with the placement it was written with.
	Placement Placement
}

// Placement is where a Blocks puts blocks on the ring.
type Placement uint8

// The placements.
const (
	PlaceD2    Placement = iota // at the key: a file's and a directory's blocks together
	PlaceBlock                  // at a hash of the key: every block on its own
)

// ParsePlacement reads "d2" or "block".
func ParsePlacement(s string) (Placement, error) {
	switch s {
	case "d2":
		return PlaceD2, nil
	case "block":
		return PlaceBlock, nil
	}
	return 0, fmt.Errorf("placement %q: want d2 or block", s)
}

func (p Placement) String() string {
	if p == PlaceBlock {
		return "block"
	}
	return "d2"
}

// pos is k's position on the ring under b's placement. Registry records
// are never placed: every machine finds a name at its key.
func (b *Blocks) pos(k key.Key) key.Key {
	if b.cfg.Placement != PlaceBlock || k.Volume() == key.Registry() {
		return k
	}
	return key.PlaceBlock(k)
}

// DefaultConfig is the configuration for addrs.
func DefaultConfig(addrs ...string) Config {
	return Config{Addrs: addrs, CallTimeout: 15 * time.Second, Passes: 5, Backoff: 500 * time.Millisecond, MinCopies: 2}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	switch {
	case len(c.Addrs) == 0:
		return errors.New("d2client: no node address")
	case c.CallTimeout < 0 || c.Passes < 0 || c.Backoff < 0 || c.MinCopies < 0:
		return errors.New("d2client: negative CallTimeout, Passes, Backoff or MinCopies")
	}
	for _, a := range c.Addrs {
		if strings.TrimSpace(a) == "" {
			return errors.New("d2client: an empty node address")
		}
	}
	return nil
}

// Blocks is d2fs.Blocks over D2 nodes. Safe for concurrent use.
type Blocks struct {
	cfg Config

	pool *client.Pool // one connection per gateway

	mu   sync.Mutex
	good int // index of the node that last answered
	keys map[key.Volume]ed25519.PrivateKey
}

// GrantLife is how long the signature of one put or delete is good for: its expiry is this far ahead of the clock when it is made (a
// node takes at most d2.MaxGrantAhead). A call that outlives it fails.
const GrantLife = 5 * time.Minute

// AddKey gives b the private key of a volume's writer: b signs the puts
// and deletes of that volume's keys with it (the nodes refuse them
// unsigned). It returns the volume, whose ID the public key
// derives (key.VolumeOfKey).
func (b *Blocks) AddKey(priv ed25519.PrivateKey) key.Volume {
	v := key.VolumeOfKey(priv.Public().(ed25519.PublicKey))
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.keys == nil {
		b.keys = map[key.Volume]ed25519.PrivateKey{}
	}
	b.keys[v] = priv
	return v
}

// HasKey says whether b holds the private key of volume v.
func (b *Blocks) HasKey(v key.Volume) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.keys[v]
	return ok
}

// sign is the writer's consent to op on k (putting data, replacing the
// block whose SHA-256 is prev), or ErrNoKey. A registry key's put if
// absent goes unsigned (a zero D2Auth); no other write of it is allowed.
func (b *Blocks) sign(op key.Op, k key.Key, data []byte, prev [32]byte) (wire.D2Auth, error) {
	if k.Volume() == key.Registry() {
		if op != key.OpIfAbsent {
			return wire.D2Auth{}, fmt.Errorf("%w: registry records are put if absent only, never replaced or deleted (%v)", ErrNoKey, k)
		}
		return wire.D2Auth{}, nil
	}
	b.mu.Lock()
	priv, ok := b.keys[k.Volume()]
	b.mu.Unlock()
	if !ok {
		return wire.D2Auth{}, fmt.Errorf("%w %v", ErrNoKey, k.Volume())
	}
	g := key.Grant{Op: op, Key: k, Prev: prev, Expires: time.Now().Add(GrantLife).UnixNano()}
	if op != key.OpDelete {
		g.Sum = sha256.Sum256(data)
	}
	a := wire.D2Auth{Pub: priv.Public().(ed25519.PublicKey), Expires: uint64(g.Expires), Sig: g.Sign(priv)}
	if b.pos(k) != k {
		a.Signed = bytes.Clone(k[:])
	}
	return a, nil
}

var _ d2fs.Blocks = (*Blocks)(nil)

// New returns a Blocks over cfg.Addrs. It dials nothing yet.
func New(cfg Config) (*Blocks, error) {
	def := DefaultConfig()
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = def.CallTimeout
	}
	if cfg.Passes == 0 {
		cfg.Passes = def.Passes
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = def.Backoff
	}
	if cfg.MinCopies == 0 {
		cfg.MinCopies = def.MinCopies
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Blocks{cfg: cfg, pool: client.NewPool(cfg.Options)}, nil
}

// Close closes the pooled connections; calls after it fail.
func (b *Blocks) Close() error {
	b.pool.Close()
	return nil
}

// Good is the address of the node that last answered (the first one
// before any did).
func (b *Blocks) Good() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cfg.Addrs[b.good]
}

// answer is one node's reply to a request, or why it gave none.
type answer struct {
	addr string
	msg  wire.Msg
	err  error
}

// failOver says whether err, from one node, is worth asking another node:
// the node is unreachable, slow, busy or cut off from the key's owner, or
// does not run D2. An answer about the block (not found, damaged, too
// large, a bad request) would be the same from any gateway.
func failOver(err error) bool {
	var we *wire.Error
	if !errors.As(err, &we) {
		return true // a transport error or a timeout
	}
	switch we.Code {
	case fault.CodeBusy, fault.CodeUnavailable, fault.CodeNoRoute, fault.CodeInternal, fault.CodeNoVnode, fault.CodeNoProtocol, fault.CodeJoining:
		return true
	}
	return false
}

// noD2 says whether a node refused a message because it runs no D2 (the
// host has no protocol for D2's message types).
func noD2(we *wire.Error) bool { return we.Code == fault.CodeNoProtocol }

// call sends m to the node that last answered, and on to the others when
// one fails (failOver), for at most cfg.Passes passes (client.Failover);
// check may turn a reply into a failure worth another node (a put short
// of copies). It returns the first answer that is not such a failure, or
// every node's last failure.
func (b *Blocks) call(ctx context.Context, m wire.Msg, check func(wire.Msg) error) answer {
	b.mu.Lock()
	start := b.good
	b.mu.Unlock()
	answers := make([]answer, len(b.cfg.Addrs))
	policy := client.Failover{Passes: b.cfg.Passes, Backoff: b.cfg.Backoff, Retry: failOver}
	i, last, err := policy.Run(ctx, len(b.cfg.Addrs), start, func(i int) error {
		a := b.callOne(ctx, b.cfg.Addrs[i], m)
		if a.err == nil && check != nil {
			a.err = check(a.msg)
		}
		answers[i] = a
		return a.err
	})
	switch {
	case err != nil:
		return answer{err: err}
	case i < 0:
		return answer{err: b.noNode(last)}
	}
	b.mu.Lock()
	b.good = i
	b.mu.Unlock()
	return answers[i]
}

// callOne sends m to the node at addr, within CallTimeout.
func (b *Blocks) callOne(ctx context.Context, addr string, m wire.Msg) answer {
	cctx, cancel := context.WithTimeout(ctx, b.cfg.CallTimeout)
	defer cancel()
	c, err := b.pool.Conn(cctx, addr)
	if err != nil {
		return answer{addr: addr, err: err}
	}
	reply, err := c.Call(cctx, m)
	var we *wire.Error
	if err != nil && !errors.As(err, &we) {
		// The connection broke or the node is slow: a fresh one next
		// time (a reply that comes late must not be read as another's).
		b.pool.Drop(addr, c)
	}
	return answer{addr: addr, msg: reply, err: err}
}

// notJoined says whether a node refused a request because D2 there is
// still joining the ring (d2.ErrNotJoined, fault.CodeJoining).
func notJoined(we *wire.Error) bool { return we.Code == fault.CodeJoining }

// JoiningError is the error when no node served a request and some
// answered that D2 there is still joining the ring (ErrJoining): they run
// D2, so the fix is to wait for their join, not to restart them with
// other flags. It wraps ErrJoining and ErrNoNode (every node's failure).
type JoiningError struct {
	Addrs []string // the nodes still joining
	Err   error    // ErrNoNode with every node's failure
}

func (e *JoiningError) Error() string {
	return fmt.Sprintf("d2client: D2 on %s is still joining the ring; %v", strings.Join(e.Addrs, ", "), e.Err)
}

// Unwrap gives ErrJoining and Err.
func (e *JoiningError) Unwrap() []error { return []error{ErrJoining, e.Err} }

// noNode is the error when every node failed: ErrNoD2 if every node
// said it runs no D2, errMismatch if every node returned bad bytes, a
// *JoiningError if some said D2 there is still joining the ring, else
// ErrNoNode with each node's failure.
func (b *Blocks) noNode(last []error) error {
	var parts, joining []string
	allNoD2, allMismatch, allSettling := true, true, true
	for i, err := range last {
		parts = append(parts, fmt.Sprintf("%s: %v", b.cfg.Addrs[i], err))
		var we *wire.Error
		isWire := errors.As(err, &we)
		if !isWire || !noD2(we) {
			allNoD2 = false
		}
		if !isWire || (we.Code != fault.CodeNoRoute && we.Code != fault.CodeUnavailable && we.Code != fault.CodeBusy && we.Code != fault.CodeJoining) {
			allSettling = false
		}
		if isWire && notJoined(we) {
			joining = append(joining, b.cfg.Addrs[i])
		}
		allMismatch = allMismatch && errors.Is(err, errMismatch)
	}
	all := fmt.Errorf("%w (%s)", ErrNoNode, strings.Join(parts, "; "))
	switch {
	case allNoD2:
		return fmt.Errorf("%w: %s", ErrNoD2, strings.Join(b.cfg.Addrs, ", "))
	case allMismatch:
		return errMismatch
	case len(joining) > 0:
		return &JoiningError{Addrs: joining, Err: all}
	case allSettling && len(last) > 0:
		return fmt.Errorf("%w: %w", ErrSettling, all)
	}
	return all
}

// blockErr maps a node's error about a block to d2fs's sentinels.
func blockErr(err error, k key.Key) error {
	switch {
	case errors.Is(err, fault.ErrNotFound):
		return fmt.Errorf("%w: %v: %w", d2fs.ErrNotFound, k, err)
	case errors.Is(err, fault.ErrCorrupt):
		return fmt.Errorf("%w: %v: %w", d2fs.ErrCorrupt, k, err)
	case errors.Is(err, ErrNoNode), errors.Is(err, ErrNoD2), errors.Is(err, ErrRange):
		return err // about the nodes or the call, not the key
	}
	return fmt.Errorf("d2client: %v: %w", k, err)
}

// stored checks a D2StoreDone answer to a put: durable on MinCopies.
func (b *Blocks) stored(m wire.Msg) error {
	s, ok := m.(*wire.D2StoreDone)
	switch {
	case !ok:
		return fmt.Errorf("d2client: a put answered with %T", m)
	case s.Conflict:
		return nil // the caller's to judge
	case s.NotMine:
		return fmt.Errorf("%w: the gateway's owner said not mine", fault.ErrNoRoute)
	case int(s.Copies) < b.cfg.MinCopies:
		return fmt.Errorf("%w: stored on %d replicas, want %d", fault.ErrUnavailable, s.Copies, b.cfg.MinCopies)
	}
	return nil
}

// Put implements d2fs.Blocks: it replaces what k held, signed with the
// volume's key (ErrNoKey without one).
func (b *Blocks) Put(ctx context.Context, k key.Key, data []byte) error {
	auth, err := b.sign(key.OpReplace, k, data, [32]byte{})
	if err != nil {
		return err
	}
	a := b.call(ctx, &wire.D2Put{Key: b.pos(k).ID(), Data: data, Mode: wire.D2PutReplace, Auth: auth}, b.stored)
	if a.err != nil {
		return blockErr(a.err, k)
	}
	if a.msg.(*wire.D2StoreDone).Conflict {
		return fmt.Errorf("d2client: %s refused to replace %v (a node without put modes?)", a.addr, k)
	}
	return nil
}

// PutIf implements d2fs.Blocks: if-absent for a zero prev, else if-hash.
// A try that failed (a timeout says nothing of whether it reached the
// owner) may still have stored data, and the retry then finds the key
// changed: so a conflict is believed only once the key is seen to hold
// other bytes than data. It is signed with the volume's key (ErrNoKey
// without one), except a registry key's put if absent.
func (b *Blocks) PutIf(ctx context.Context, k key.Key, prev [32]byte, data []byte) error {
	m := &wire.D2Put{Key: b.pos(k).ID(), Data: data, Mode: wire.D2PutIfAbsent}
	op := key.OpIfAbsent
	if prev != [32]byte{} {
		m.Mode, m.Prev, op = wire.D2PutIfHash, prev[:], key.OpIfHash
	}
	auth, err := b.sign(op, k, data, prev)
	if err != nil {
		return err
	}
	m.Auth = auth
	a := b.call(ctx, m, b.stored)
	if a.err != nil {
		return blockErr(a.err, k)
	}
	if !a.msg.(*wire.D2StoreDone).Conflict {
		return nil
	}
	if got, now, err := b.Latest(ctx, k, k); err == nil && got == k && bytes.Equal(now, data) {
		return nil
	}
	return fmt.Errorf("%w: %v", d2fs.ErrConflict, k)
}

// Get implements d2fs.Blocks: bytes whose SHA-256 is sum, or an error.
func (b *Blocks) Get(ctx context.Context, k key.Key, sum [32]byte) ([]byte, error) {
	a := b.call(ctx, &wire.D2Get{Key: b.pos(k).ID(), Hash: sum[:]}, func(m wire.Msg) error {
		blk, ok := m.(*wire.D2Block)
		switch {
		case !ok:
			return fmt.Errorf("d2client: a get answered with %T", m)
		case blk.Found && sha256.Sum256(blk.Data) != sum:
			// The gateway checks too; one that does not is not believed,
			// and another is asked.
			return errMismatch
		}
		return nil
	})
	if a.err != nil {
		return nil, blockErr(a.err, k)
	}
	blk := a.msg.(*wire.D2Block)
	if !blk.Found {
		return nil, fmt.Errorf("%w: %v", d2fs.ErrNotFound, k)
	}
	return blk.Data, nil
}

// Delete implements d2fs.Blocks, signed with the volume's key (ErrNoKey
// without one).
func (b *Blocks) Delete(ctx context.Context, k key.Key) error {
	auth, err := b.sign(key.OpDelete, k, nil, [32]byte{})
	if err != nil {
		return err
	}
	a := b.call(ctx, &wire.D2Delete{Key: b.pos(k).ID(), Auth: auth}, func(m wire.Msg) error {
		if _, ok := m.(*wire.D2StoreDone); !ok {
			return fmt.Errorf("d2client: a delete answered with %T", m)
		}
		return nil
	})
	if a.err != nil && !errors.Is(a.err, fault.ErrNotFound) {
		return blockErr(a.err, k)
	}
	return nil
}

// Latest implements d2fs.Blocks for prefix ranges (see the package doc).
// Under block placement, only ranges of one block's versions.
func (b *Blocks) Latest(ctx context.Context, lo, hi key.Key) (key.Key, []byte, error) {
	if b.pos(lo) != lo {
		if lo.WithBlock(lo.Block(), 0) != hi.WithBlock(hi.Block(), 0) {
			return key.Key{}, nil, fmt.Errorf("%w: [%v, %v] spans more than one block's versions, which block placement scatters", ErrRange, lo, hi)
		}
		got, data, err := b.latest(ctx, b.pos(lo), b.pos(hi))
		if err != nil {
			return key.Key{}, nil, err
		}
		return lo.WithBlock(lo.Block(), got.Version()), data, nil
	}
	return b.latest(ctx, lo, hi)
}

// latest is Latest over positions.
func (b *Blocks) latest(ctx context.Context, lo, hi key.Key) (key.Key, []byte, error) {
	prefix, err := prefixOf(lo, hi)
	if err != nil {
		return key.Key{}, nil, err
	}
	a := b.call(ctx, &wire.D2Latest{Prefix: prefix}, func(m wire.Msg) error {
		switch m.(type) {
		case *wire.D2Block:
			return nil
		case *wire.D2KeyList:
			return fmt.Errorf("%w: the node answers latest with keys only (an older triad)", fault.ErrInternal)
		}
		return fmt.Errorf("d2client: a latest answered with %T", m)
	})
	if a.err != nil {
		return key.Key{}, nil, blockErr(a.err, lo)
	}
	blk := a.msg.(*wire.D2Block)
	if !blk.Found {
		return key.Key{}, nil, fmt.Errorf("%w in [%v, %v]", d2fs.ErrNotFound, lo, hi)
	}
	got, err := key.FromID(blk.Key)
	switch {
	case err != nil:
		return key.Key{}, nil, fmt.Errorf("d2client: %s answered latest with %w", a.addr, err)
	case !bytes.HasPrefix(got[:], prefix):
		return key.Key{}, nil, fmt.Errorf("d2client: %s answered latest of %x with %v, outside the prefix", a.addr, prefix, got)
	case bytes.Compare(got[:], lo[:]) < 0:
		return key.Key{}, nil, fmt.Errorf("%w in [%v, %v]", d2fs.ErrNotFound, lo, hi)
	}
	return got, blk.Data, nil
}

// Holders asks which nodes hold k: its r holders by placement, the
// owner first, and for each whether it keeps a copy whose SHA-256 is sum,
// has none (or other bytes), or did not answer the gateway (triad fs
// stat). It is a snapshot: the ring and the replicas change.
func (b *Blocks) Holders(ctx context.Context, k key.Key, sum [32]byte) ([]wire.D2Holder, error) {
	a := b.call(ctx, &wire.D2Stat{Key: b.pos(k).ID(), Hash: sum[:]}, func(m wire.Msg) error {
		h, ok := m.(*wire.D2Holders)
		if !ok {
			return fmt.Errorf("d2client: a stat answered with %T", m)
		}
		for _, x := range h.Holders {
			if x.State >= wire.D2HolderStates || x.Node.Node.Addr == "" {
				return fmt.Errorf("%w: a stat answered with holder %q in state %d", fault.ErrInternal, x.Node.Node.Addr, x.State)
			}
		}
		return nil
	})
	if a.err != nil {
		return nil, blockErr(a.err, k)
	}
	return a.msg.(*wire.D2Holders).Holders, nil
}

// Space asks the node at addr about its D2 store (D2GetSpace): its
// engine's capacity (0: no bound set) and usage, the ring's r, and whether
// D2 there is on the ring; it answers that even while joining, so it is
// the cheapest way to learn a node's join (triad fs status). One try,
// within CallTimeout. A node without D2 gives ErrNoD2.
func (b *Blocks) Space(ctx context.Context, addr string) (wire.D2Space, error) {
	a := b.callOne(ctx, addr, &wire.D2GetSpace{})
	var we *wire.Error
	switch s, ok := a.msg.(*wire.D2Space); {
	case a.err != nil && errors.As(a.err, &we) && noD2(we):
		return wire.D2Space{}, fmt.Errorf("%w: %s", ErrNoD2, addr)
	case a.err != nil:
		return wire.D2Space{}, fmt.Errorf("d2client: %s: %w", addr, a.err)
	case !ok:
		return wire.D2Space{}, fmt.Errorf("d2client: %s answered a space request with %T", addr, a.msg)
	default:
		return *s, nil
	}
}

// Room implements d2fs.RoomTeller: the D2 store of the first node that
// answers (the nodes in turn, as every call), for a mount's statfs.
func (b *Blocks) Room(ctx context.Context) (d2fs.Room, error) {
	a := b.call(ctx, &wire.D2GetSpace{}, func(m wire.Msg) error {
		if _, ok := m.(*wire.D2Space); !ok {
			return fmt.Errorf("d2client: a space request answered with %T", m)
		}
		return nil
	})
	if a.err != nil {
		return d2fs.Room{}, a.err
	}
	s := a.msg.(*wire.D2Space)
	return d2fs.Room{Node: a.addr, Capacity: s.Capacity, Usage: s.Usage, Replicas: int(s.Replicas)}, nil
}

// prefixOf is the prefix whose keys [lo, hi] covers from lo up: the
// common prefix of lo and hi, when hi is that prefix and then 0xff bytes
// only (every key with the prefix is at most hi). Otherwise ErrRange.
func prefixOf(lo, hi key.Key) ([]byte, error) {
	n := 0
	for n < key.Size && lo[n] == hi[n] {
		n++
	}
	for _, c := range hi[n:] {
		if c != 0xff {
			return nil, fmt.Errorf("%w: [%v, %v] ends before its prefix's last key", ErrRange, lo, hi)
		}
	}
	if bytes.Compare(lo[:], hi[:]) > 0 {
		return nil, fmt.Errorf("%w: [%v, %v] is empty", ErrRange, lo, hi)
	}
	return bytes.Clone(hi[:n]), nil
}

// List calls fn with every stored key that starts with prefix, in key
// order (a D2List, followed from owner to owner). Under block placement
// a volume's keys are scattered and no prefix lists them: ErrRange.
func (b *Blocks) List(ctx context.Context, prefix []byte, fn func(key.Key) error) error {
	if b.cfg.Placement != PlaceD2 {
		return fmt.Errorf("%w: block placement scatters a prefix's keys", ErrRange)
	}
	var after id.ID
	for {
		prev := after
		a := b.call(ctx, &wire.D2List{Prefix: prefix, After: after}, func(m wire.Msg) error {
			if _, ok := m.(*wire.D2Listing); !ok {
				return fmt.Errorf("d2client: a list answered with %T", m)
			}
			return nil
		})
		if a.err != nil {
			return fmt.Errorf("d2client: listing %x: %w", prefix, a.err)
		}
		l := a.msg.(*wire.D2Listing)
		for _, x := range l.Keys {
			k, err := key.FromID(x)
			switch {
			case err != nil:
				return fmt.Errorf("d2client: %s listed %w", a.addr, err)
			case !bytes.HasPrefix(k[:], prefix) || !after.IsZero() && x.Cmp(after) <= 0:
				return fmt.Errorf("d2client: %s listed %v, outside the prefix or out of order", a.addr, k)
			}
			if err := fn(k); err != nil {
				return err
			}
			after = x
		}
		switch {
		case l.Next.IsZero():
			return nil
		case !prev.IsZero() && l.Next.Cmp(prev) <= 0, !bytes.HasPrefix(l.Next.Bytes(), prefix):
			return fmt.Errorf("d2client: %s continued a listing at %v, not past %v or outside the prefix", a.addr, l.Next, prev)
		}
		after = l.Next
	}
}
