package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"triad/internal/e2e"

	"triad/internal/d2"
	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/pki"
	"triad/internal/ring"
	"triad/internal/tapestry"
	"triad/internal/tcp"
	"triad/internal/testutil"
	"triad/internal/wire"
)

// TestInsiderCertificate (issue 44): four `triad node --tls --d2
// --tapestry` processes with certificates of the deployment's CA hold a
// D2-FS volume and a published object. A fifth certificate of the same
// CA, for an address on no ring, speaks to them as a node over mutual
// TLS: it lists every D2 key each node holds and sends each holder an
// unsigned drop, another writer's bytes in place of the block (unsigned,
// and as a replica's copy with a forged version), and sends every node
// Tapestry pointers naming another node as server of the object and of a
// key nobody serves, and removals of the real server's pointers. Every
// D2 message is refused (before: 24 of 24 drops took effect, replaces
// landed on every holder); the file reads back whole through every
// node; every locate finds the real server, and `locate --all` names it
// alone.
func TestInsiderCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	c := e2e.NewCluster(t)
	ca := newTestCA(t, filepath.Join(c.Dir, "ca"))
	issue := func(name, addr string) string { return issueBundle(t, ca, c.Dir, name, addr, 1, time.Hour) }
	ports := e2e.FreePorts(t, 5)
	addrs := make([]string, 4)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", ports[i])
	}
	insiderAddr := fmt.Sprintf("127.0.0.1:%d", ports[4])
	c.TLSDir = issue("operator", "")
	var procs []*e2e.Node
	for i, a := range addrs {
		join := ""
		if i > 0 {
			join = addrs[0]
		}
		procs = append(procs, c.StartWith(fmt.Sprintf("node%d", i), a, filepath.Join(c.Dir, fmt.Sprintf("data%d", i)), join, 1,
			"--tls", issue(fmt.Sprintf("node%d", i), a), "--d2", "--d2-stabilize", "1s", "--tapestry", "--d2-max-names", "4"))
	}
	c.WaitConsistent("TLS ring", 30*time.Second)

	env := append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "TRIAD_TLS="+c.TLSDir)
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, c.Bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("triad %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	// The volume, once D2's ring stores (a name a try, as a try that
	// failed half way may have taken it).
	try := 0
	if !testutil.Poll(60*time.Second, func() bool {
		try++
		_, err := run("fs", "mkvol", fmt.Sprintf("probe%d", try), "--addr", addrs[0])
		return err == nil
	}) {
		t.Fatalf("D2 never took a volume: %s", c.Logs())
	}
	if _, err := run("fs", "mkvol", "home", "--addr", addrs[0]); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(c.Dir, "payroll.txt")
	data := bytes.Repeat([]byte("salaries, in confidence\n"), 2000) // several blocks
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run("fs", "put", "home:/payroll.txt", file, "--addr", addrs[1]); err != nil {
		t.Fatal(err)
	}
	out, err := run("publish", file, "--addr", addrs[2])
	if err != nil {
		t.Fatal(err)
	}
	object := strings.Fields(out)[0]
	if !testutil.Poll(30*time.Second, func() bool {
		out, err := run("locate", object, "--addr", addrs[0])
		return err == nil && strings.Contains(out, addrs[2])
	}) {
		t.Fatalf("the published object is never located")
	}

	in := startInsider(t, issue("insider", insiderAddr), insiderAddr)
	refused, took := 0, 0
	for _, a := range addrs {
		reply, err := in.call(a, &wire.D2Keys{Lo: id.Min(d2.KeyBytes), Hi: id.Min(d2.KeyBytes), Max: wire.MaxD2Keys})
		list, ok := reply.(*wire.D2KeyList)
		if err != nil || !ok {
			t.Fatalf("listing %s's keys: %v, %v", a, reply, err)
		}
		forged := uint64(time.Now().Add(400 * 24 * time.Hour).UnixNano())
		for _, k := range list.Keys {
			for _, m := range []wire.Msg{
				&wire.D2Drop{Key: k},
				&wire.D2Store{Key: k, Data: []byte("an insider's bytes"), Replace: true, Version: forged},
				&wire.D2Store{Key: k, Data: []byte("an insider's bytes"), Primary: true, Mode: wire.D2PutReplace},
			} {
				reply, err := in.call(a, m)
				if s, ok := reply.(*wire.D2StoreDone); err == nil && ok && s.Copies > 0 {
					took++
					t.Errorf("%T of %s at %s: %+v", m, k.Short(), a, s)
				} else {
					refused++
				}
			}
		}
	}
	if refused == 0 {
		t.Fatal("the nodes held no D2 keys to attack")
	}
	t.Logf("insider: %d D2 requests refused, %d took effect", refused, took)

	objectID, err := id.Parse(object, id.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	server := nodeRef(t, addrs[2], filepath.Join(c.Dir, "bundles", "node2"))
	other := nodeRef(t, addrs[3], filepath.Join(c.Dir, "bundles", "node3"))
	nobodys := id.Key([]byte("nobody serves this"))
	pointers := []wire.TapPointer{
		{Key: objectID, App: tapestry.AppDOLR, Server: other, TTLMillis: 600_000},
		{Key: nobodys, App: tapestry.AppDOLR, Server: other, TTLMillis: 600_000},
		{Key: objectID, App: tapestry.AppDOLR, Server: server, Remove: true},
	}
	for _, a := range addrs {
		if _, err := in.call(a, &wire.TapPointers{Pointers: pointers}); err != nil {
			t.Errorf("pointers to %s: %v", a, err)
		}
	}
	// Every node took the insider's pointers: each dropped the forged
	// ones it was sent straight (its server said no, or it is the named
	// server), whether or not it is a key's root.
	if !testutil.Poll(20*time.Second, func() bool {
		for _, a := range addrs {
			out, err := run("tapestry", "status", "--json", "--addr", a)
			if err != nil || !strings.Contains(out, `"pointers_forged":`) || strings.Contains(out, `"pointers_forged":0`) {
				return false
			}
		}
		return true
	}) {
		t.Fatal("not every node counted a forged pointer")
	}
	for _, a := range addrs {
		got, err := run("fs", "cat", "home:/payroll.txt", "--addr", a)
		if err != nil || got != string(data) {
			t.Errorf("fs cat through %s after the insider: %d bytes, %v", a, len(got), err)
		}
		if out, err := run("locate", object, "--addr", a); err != nil || !strings.Contains(out, addrs[2]) {
			t.Errorf("locate through %s after the insider: %q, %v", a, out, err)
		}
		out, err := run("locate", object, "--all", "--json", "--addr", a)
		var located struct{ Servers []string }
		if err == nil {
			err = json.Unmarshal([]byte(out), &located)
		}
		if err != nil || !slices.Equal(located.Servers, []string{addrs[2]}) {
			t.Errorf("locate --all through %s after the insider: %q, %v; want %s alone", a, out, err, addrs[2])
		}
	}
	if out, err := run("fs", "fsck", "home", "--addr", addrs[0]); err != nil {
		t.Errorf("fsck after the insider: %s, %v", out, err)
	}

	// Row 5: a client certificate claims names through node 0 up to the
	// nodes' quota (--d2-max-names 4), and no further, even after node 0
	// is killed and started again; another client still can, and the
	// quota is per node (docs/d2.md).
	claimer, another := issue("claimer", ""), issue("another", "")
	mkvol := func(bundle, name, addr string) error {
		cmd := exec.Command(c.Bin, "fs", "mkvol", name, "--addr", addr)
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "TRIAD_TLS="+bundle)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	for i := range 4 {
		if err := mkvol(claimer, fmt.Sprintf("claimed%d", i), addrs[0]); err != nil {
			t.Fatalf("claim %d of the quota's 4: %v", i+1, err)
		}
	}
	if err := mkvol(claimer, "claimed4", addrs[0]); err == nil || !strings.Contains(err.Error(), "name quota") {
		t.Errorf("a fifth claim through the same node: %v, want the name quota", err)
	}
	procs[0].Crash(t)
	c.Restart(procs[0])
	if !testutil.Poll(30*time.Second, func() bool { return mkvol(another, fmt.Sprintf("another%d", time.Now().UnixNano()), addrs[0]) == nil }) {
		t.Fatal("another client's claim through the restarted node never succeeded")
	}
	if err := mkvol(claimer, "claimed5", addrs[0]); err == nil || !strings.Contains(err.Error(), "name quota") {
		t.Errorf("a claim past the quota after the node's restart: %v, want the name quota", err)
	}
	if err := mkvol(claimer, "claimed6", addrs[1]); err != nil {
		t.Errorf("a claim through another node: %v", err)
	}
}

// insider is a node certificate's holder speaking to the ring as a node:
// a TCP driver with the certificate and a bare host runtime.
type insider struct {
	T    *testing.T
	d    *tcp.Driver
	h    *host.Host
	self wire.NodeRef
}

// startInsider runs an insider at addr with the node bundle in dir.
func startInsider(t *testing.T, dir, addr string) *insider {
	t.Helper()
	b, err := pki.LoadBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := tcp.Listen(tcp.Config{Listen: addr, TLS: b, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(host.DefaultConfig(), d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, h) }()
	t.Cleanup(func() { cancel(); <-done })
	return &insider{T: t, d: d, h: h, self: wire.NodeRef{ID: ring.VnodeID(addr, 0), Addr: addr, Machine: b.Self.MachineID()}}
}

// call sends m to addr and waits for the reply.
func (in *insider) call(addr string, m wire.Msg) (wire.Msg, error) {
	type answer struct {
		m   wire.Msg
		err error
	}
	out := make(chan answer, 1)
	err := in.d.Do(context.Background(), func(env node.Env) {
		if !in.h.Call(env, addr, in.self, ring.VnodeID(addr, 0), m, 5*time.Second, func(_ node.Env, reply wire.Msg, err error) {
			out <- answer{reply, err}
		}) {
			out <- answer{nil, errors.New("call refused")}
		}
	})
	if err != nil {
		return nil, err
	}
	select {
	case a := <-out:
		return a.m, a.err
	case <-time.After(15 * time.Second):
		return nil, errors.New("no answer in 15 s")
	}
}

// nodeRef is the reference of the node at addr with the bundle in dir.
func nodeRef(t *testing.T, addr, dir string) wire.NodeRef {
	b, err := pki.LoadBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	return wire.NodeRef{ID: ring.VnodeID(addr, 0), Addr: addr, Machine: b.Self.MachineID()}
}
