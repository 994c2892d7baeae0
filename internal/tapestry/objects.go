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

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/store"
	"triad/internal/wire"
)

// ObjectsFile is the state file that lists the objects a node publishes,
// so that it republishes them after a restart.
const ObjectsFile = "tapestry-objects"

// Object is one object a node publishes: its application and its expiry
// (zero: none).
type Object struct {
	App     uint32
	Expires time.Time
}

// LoadObjects reads the objects an earlier run published; none if the
// file does not exist.
func LoadObjects(d node.Disk) (map[id.ID]Object, error) {
	b, err := d.ReadFile(ObjectsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeObjects(b)
}

// encodeObjects writes one line per object: key, application, expiry in
// Unix nanoseconds (0: none).
func encodeObjects(objs map[id.ID]Object) []byte {
	var b bytes.Buffer
	b.WriteString("# triad tapestry objects v1: key app expiry-unix-nanos\n")
	for _, k := range sortedIDs(objs) {
		o := objs[k]
		var exp int64
		if !o.Expires.IsZero() {
			exp = o.Expires.UnixNano()
		}
		fmt.Fprintf(&b, "%s %d %d\n", k, o.App, exp)
	}
	return b.Bytes()
}

func decodeObjects(data []byte) (map[id.ID]Object, error) {
	out := map[id.ID]Object{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 3 {
			return nil, fmt.Errorf("tapestry: %s line %d: want key, app and expiry", ObjectsFile, line)
		}
		k, err := id.Parse(f[0], id.Bytes)
		if err != nil {
			return nil, fmt.Errorf("tapestry: %s line %d: %v", ObjectsFile, line, err)
		}
		app, err1 := strconv.ParseUint(f[1], 10, 32)
		exp, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("tapestry: %s line %d: bad app or expiry", ObjectsFile, line)
		}
		o := Object{App: uint32(app)}
		if exp != 0 {
			o.Expires = time.Unix(0, exp).UTC()
		}
		out[k] = o
	}
	return out, sc.Err()
}

// objects is the published set as saved.
func (n *Node) objects() map[id.ID]Object {
	out := make(map[id.ID]Object, len(n.published))
	for k, o := range n.published {
		out[k] = Object{App: o.app, Expires: o.expires}
	}
	return out
}

// saveDelay batches the saves of the published set.
const saveDelay = time.Second

// changed schedules a save of the published set.
func (n *Node) changed(env node.Env) {
	if !n.saveDue {
		n.saveDue = true
		env.After(saveDelay, saveTimer{})
	}
}

// saveWork writes the published set off the event loop.
type saveWork struct{ data []byte }

func (w *saveWork) Run(s node.Storage) (any, error) { return nil, s.WriteFile(ObjectsFile, w.data) }

// putWork stores an object in the host's engine.
type putWork struct {
	key     id.ID
	data    []byte
	expires time.Time
	then    func(env node.Env, err error)
}

func (w *putWork) Run(s node.Storage) (any, error) {
	return nil, s.Engine().Put(w.key, w.data, w.expires, store.PutOptions{})
}

// getWork reads an object from the host's engine.
type getWork struct {
	key  id.ID
	then func(env node.Env, data []byte, err error)
}

func (w *getWork) Run(s node.Storage) (any, error) {
	data, _, err := s.Engine().Get(w.key)
	return data, err
}

// foreverTTL is the expiry the engine gets for an object published with
// none: the longest a pointer may live, renewed by nothing; a served
// object with no expiry is kept by its publisher, and the engine's copy
// lasts ten years.
const foreverTTL = 10 * 365 * 24 * time.Hour

// clientPublish stores a client's object in the engine under its content
// key and publishes it.
func (n *Node) clientPublish(env node.Env, in node.MsgIn, m *wire.TapPublish) {
	if len(m.Data) == 0 {
		rpc.RespondError(env, in, n.self, fault.CodeBadRequest, "tapestry: an empty object")
		return
	}
	key := id.Key(m.Data)
	var expires time.Time
	engineExpiry := env.Now().Add(foreverTTL)
	if m.TTLMillis > 0 {
		expires = env.Now().Add(time.Duration(m.TTLMillis) * time.Millisecond)
		engineExpiry = expires
	}
	app := m.App
	if app == AppSystem {
		app = AppDOLR
	}
	env.Offload(&putWork{key: key, data: m.Data, expires: engineExpiry, then: func(env node.Env, err error) {
		if err != nil {
			rpc.RespondError(env, in, n.self, fault.CodeOf(err), "tapestry: storing the object: "+err.Error())
			return
		}
		n.Publish(env, key, app, expires)
		rpc.Respond(env, in, n.self, &wire.TapPublishDone{Key: key})
	}})
}

// clientLocate routes a client's locate or fetch and answers with the
// outcome.
func (n *Node) clientLocate(env node.Env, in node.MsgIn, m *wire.TapLocate) {
	reply := func(env node.Env, o Outcome) {
		if o.Err != nil {
			rpc.RespondError(env, in, n.self, fault.CodeNoRoute, o.Err.Error())
			return
		}
		r := &wire.TapLocateDone{Found: o.Status == wire.TapDelivered, Root: o.Root, Hops: uint32(o.Hops), Path: o.Path,
			Micros: uint64(o.Latency / time.Microsecond), Data: o.Payload}
		switch {
		case m.All:
			r.Servers = o.Servers
		case r.Found:
			r.Servers = []wire.NodeRef{o.Node}
		}
		if !r.Found && r.Root.IsZero() {
			// Not found: the route ended at the root. A route that met a
			// pointer on the way knows no root, and names none (the
			// server is not the root).
			r.Root = o.Node
		}
		rpc.Respond(env, in, n.self, r)
	}
	switch {
	case m.All:
		n.LocateAll(env, m.Key, reply)
	case m.Fetch:
		n.RouteToObject(env, m.Key, AppFetch, nil, reply)
	default:
		app := m.App
		if app == AppSystem || app == AppFetch {
			app = AppDOLR
		}
		n.RouteToObject(env, m.Key, app, nil, reply)
	}
}
