package tapestry

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// RootsFile is the state file that keeps the pointers a node holds as a
// key's root. Pointers are soft state, but a root's are the ones a locate
// cannot do without: a node killed and started again before anyone found
// it dead is routed to as the root again at once, and with its root
// pointers gone its objects would answer not-found until their servers'
// next republish (10 minutes by default). It reloads them instead.
const RootsFile = "tapestry-roots"

// RootPointer is a root pointer as saved.
type RootPointer struct {
	Key     id.ID
	Server  wire.NodeRef
	App     uint32
	Level   uint32
	Expires time.Time
}

// rootsDelay batches the saves of the root pointers: they change with
// every publish that reaches this node as root.
const rootsDelay = 10 * time.Second

// LoadRoots reads the root pointers an earlier run saved; none if the
// file does not exist.
func LoadRoots(d node.Disk) ([]RootPointer, error) {
	b, err := d.ReadFile(RootsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeRoots(b)
}

// encodeRoots writes one line per pointer: key, server ID, address and
// machine, application, level, expiry in Unix nanoseconds.
func encodeRoots(l []RootPointer) []byte {
	var b bytes.Buffer
	b.WriteString("# triad tapestry root pointers v1: key server-id server-addr server-machine app level expiry-unix-nanos\n")
	for _, p := range l {
		fmt.Fprintf(&b, "%s %s %s %d %d %d %d\n", p.Key, p.Server.ID, p.Server.Addr, p.Server.Machine, p.App, p.Level, p.Expires.UnixNano())
	}
	return b.Bytes()
}

func decodeRoots(data []byte) ([]RootPointer, error) {
	var out []RootPointer
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		p, err := parseRoot(strings.Fields(text))
		if err != nil {
			return nil, fmt.Errorf("tapestry: %s line %d: %v", RootsFile, line, err)
		}
		out = append(out, p)
	}
	return out, sc.Err()
}

func parseRoot(f []string) (RootPointer, error) {
	if len(f) != 7 {
		return RootPointer{}, errors.New("want key, server ID, address and machine, app, level and expiry")
	}
	key, err := id.Parse(f[0], id.Bytes)
	if err != nil {
		return RootPointer{}, err
	}
	sid, err := id.Parse(f[1], id.Bytes)
	if err != nil {
		return RootPointer{}, err
	}
	machine, err1 := strconv.ParseUint(f[3], 10, 64)
	app, err2 := strconv.ParseUint(f[4], 10, 32)
	level, err3 := strconv.ParseUint(f[5], 10, 32)
	exp, err4 := strconv.ParseInt(f[6], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil || level >= uint64(id.Bits/2) { // 80 levels in base 4
		return RootPointer{}, errors.New("bad machine, app, level or expiry")
	}
	return RootPointer{Key: key, Server: wire.NodeRef{ID: sid, Addr: f[2], Machine: machine}, App: uint32(app),
		Level: uint32(level), Expires: time.Unix(0, exp).UTC()}, nil
}

// rootPointers are the pointers held as root, in key order.
func (n *Node) rootPointers() []RootPointer {
	var out []RootPointer
	for _, k := range n.ptrs.sortedKeys() {
		for _, p := range n.ptrs.byKey[k] {
			if p.root && !p.extra {
				out = append(out, RootPointer{Key: k, Server: p.server, App: p.app, Level: p.level, Expires: p.expires})
			}
		}
	}
	return out
}

// restoreRoots puts the saved root pointers still alive back in the
// table; those whose root has moved meanwhile are handed on as links
// arrive (handOverRoots).
func (n *Node) restoreRoots(env node.Env) {
	now := env.Now()
	for _, p := range n.savedRoots {
		if p.Expires.After(now) && int(p.Level) < n.table.levels && n.ptrs.count < n.cfg.MaxPointers {
			n.ptrs.put(p.Key, pointer{server: p.Server, app: p.App, expires: p.Expires, rtt: n.rttTo(p.Server), level: p.Level, root: true,
				confirmed: n.confirmedOnArrival(p.Server, "")})
			n.checkUnconfirmed(p.Key, p.Server)
		}
	}
	n.savedRoots = nil
	n.sendChecks(env)
}

// rootsChanged schedules a save of the root pointers.
func (n *Node) rootsChanged(env node.Env) {
	if !n.rootsDue {
		n.rootsDue = true
		env.After(rootsDelay, rootsTimer{})
	}
}

// saveRootsWork writes the root pointers off the event loop.
type saveRootsWork struct{ data []byte }

func (w *saveRootsWork) Run(s node.Storage) (any, error) { return nil, s.WriteFile(RootsFile, w.data) }
