package noded

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"triad/internal/d2"
	"triad/internal/deploy"
	"triad/internal/id"
	"triad/internal/pki"
	"triad/internal/ring"
)

// The defaults are a node that runs; the flags set the fields they are
// bound to; each bad value is refused naming its flag.
func TestOptions(t *testing.T) {
	o := DefaultOptions()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	o.RegisterFlags(fs)
	if err := fs.Parse([]string{"--vnodes", "4", "--join", "127.0.0.1:4001", "--maint-interval", "0", "--cc-scheme", "off"}); err != nil {
		t.Fatal(err)
	}
	a, err := o.assembly()
	if err != nil {
		t.Fatal(err)
	}
	if a.deploy.Vnodes != 4 || a.deploy.Bootstrap != "127.0.0.1:4001" || a.deploy.Maint != nil || a.deploy.CC != nil {
		t.Errorf("flags not applied: %+v", a.deploy)
	}
	if a.driver.DataDir != "triad-data/4001" || a.driver.Store.SyncInterval >= 0 || a.driver.Workers != 256 {
		t.Errorf("driver settings %+v", a.driver)
	}
	for _, tc := range []struct {
		set  func(*Options)
		want string
	}{
		{func(o *Options) { o.Vnodes = 65 }, "--vnodes 65"},
		{func(o *Options) { o.Vnodes = 0 }, "--vnodes 0"},
		{func(o *Options) { o.Vnodes, o.Positions = 8, 4 }, "--positions 4"},
		{func(o *Options) { o.Positions = 65 }, "--positions 65"},
		{func(o *Options) { o.MaxConns = 0 }, "--max-conns"},
		{func(o *Options) { o.Redundancy = "mirrors" }, "--redundancy"},
		{func(o *Options) { o.Fragments = "7" }, "--fragments"},
		{func(o *Options) { o.CapacityMB = -1 }, "--capacity-mb"},
		{func(o *Options) { o.CCScheme = "tcp" }, "--cc-scheme"},
		{func(o *Options) { o.MaintInterval = -time.Second }, "--maint-interval"},
		{func(o *Options) { o.RepairBudgetKB = -1 }, "--repair-budget"},
		{func(o *Options) { o.JoinTimeout = -time.Second }, "--join-timeout"},
		{func(o *Options) { o.TestLie = "fib" }, "--test-lie"},
		{func(o *Options) { o.SyncInterval = -time.Second }, "--sync-interval"},
		{func(o *Options) { o.SyncPeriod = -time.Second }, "--sync-period"},
		{func(o *Options) { o.SyncPeriod = time.Minute }, "--sync-period 1m0s"},
		{func(o *Options) { o.SyncPeriod, o.SyncInterval = time.Second, time.Millisecond }, "give one"},
		{func(o *Options) { o.Workers = 0 }, "--workers"},
		{func(o *Options) { o.Replicas = 0 }, "--replicas"},
	} {
		o := DefaultOptions()
		tc.set(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error naming %s, got %v", tc.want, err)
		}
	}
}

// --tapestry runs Tapestry with the flags' republish interval, beacon and
// extra pointers; without it, none runs.
func TestOptionsTapestry(t *testing.T) {
	o := DefaultOptions()
	if a, err := o.assembly(); err != nil || a.deploy.Tapestry != nil {
		t.Fatalf("defaults: Tapestry %v, %v; want none", a.deploy.Tapestry, err)
	}
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	o.RegisterFlags(fs)
	if err := fs.Parse([]string{"--tapestry", "--tapestry-republish", "20s", "--tapestry-beacon", "5s", "--tapestry-extra", "1,2,3"}); err != nil {
		t.Fatal(err)
	}
	a, err := o.assembly()
	if err != nil {
		t.Fatal(err)
	}
	c := a.deploy.Tapestry
	if c == nil || c.Republish != 20*time.Second || c.PointerTTL() != 40*time.Second || c.Beacon != 5*time.Second ||
		c.ExtraBackups != 1 || c.ExtraNearest != 2 || c.ExtraHops != 3 {
		t.Errorf("tapestry flags not applied: %+v", c)
	}
}

// --d2 runs D2 on a second engine the driver opens; without it, neither.
func TestOptionsD2(t *testing.T) {
	o := DefaultOptions()
	if a, err := o.assembly(); err != nil || a.deploy.D2 != nil || len(a.driver.Stores) != 0 {
		t.Fatalf("defaults: D2 %v, stores %v, %v; want none", a.deploy.D2, a.driver.Stores, err)
	}
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	o.RegisterFlags(fs)
	if err := fs.Parse([]string{"--d2", "--d2-stabilize", "2s"}); err != nil {
		t.Fatal(err)
	}
	a, err := o.assembly()
	if err != nil {
		t.Fatal(err)
	}
	st, ok := a.driver.Stores[d2.StoreName]
	if a.deploy.D2 == nil || a.deploy.D2.Replicas != 3 || !ok || st.MaxObject < a.deploy.D2.BlockBytes || st.KeyWidth != d2.KeyBytes {
		t.Errorf("--d2: D2 %+v, its store %+v", a.deploy.D2, st)
	}
	if a.deploy.D2.Stabilize != 2*time.Second || a.deploy.D2.FixLinks != 2*time.Second {
		t.Errorf("--d2-stabilize 2s: stabilize %v, links %v", a.deploy.D2.Stabilize, a.deploy.D2.FixLinks)
	}
	if err := fs.Parse([]string{"--d2-stabilize", "0s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.assembly(); err == nil || !strings.Contains(err.Error(), "--d2-stabilize 0s: want a positive duration") {
		t.Errorf("--d2-stabilize 0: %v", err)
	}
}

// A protocol's settings are checked where they are given: a value that
// cannot be parsed at the flag, one that cannot work when the node is
// assembled, each naming its flag; a protocol that is off is not checked.
func TestProtocolSettingsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the flag's error, or else the assembly's
	}{
		{[]string{"--tapestry", "--tapestry-republish", "0s"}, "--tapestry-republish 0s: want a positive duration"},
		{[]string{"--tapestry", "--tapestry-beacon", "-1s"}, "--tapestry-beacon -1s: want a positive duration"},
		{[]string{"--tapestry-extra", "1/1/1"}, "-tapestry-extra: want k,l,m, like 1,1,1"},
		{[]string{"--tapestry-extra", "3,1,1"}, "-tapestry-extra: tapestry: extra pointers"},
		{[]string{"--d2", "--d2-sync", "0s"}, "--d2-sync 0s: want a positive duration"},
		{[]string{"--d2", "--d2-max-names", "-1"}, "--d2-max-names -1: want 0 (no bound) or more"},
		{[]string{"--d2-stabilize", "soon"}, "-d2-stabilize"},
	} {
		o := DefaultOptions()
		fs := flag.NewFlagSet("node", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.RegisterFlags(fs)
		err := fs.Parse(tc.args)
		if err == nil {
			_, err = o.assembly()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want an error saying %q", tc.args, err, tc.want)
		}
	}
	o := DefaultOptions()
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	o.RegisterFlags(fs)
	if err := fs.Parse([]string{"--d2-sync", "0s"}); err != nil {
		t.Fatal(err)
	}
	if a, err := o.assembly(); err != nil || a.deploy.D2 != nil {
		t.Errorf("--d2-sync 0s without --d2: D2 %v, %v; want neither", a.deploy.D2, err)
	}
}

func TestMachineID(t *testing.T) {
	a, again := MachineID("a"), MachineID("a")
	if MachineID("") != 0 || a == 0 || a != again || a == MachineID("b") {
		t.Error("machine IDs are not a stable non-zero hash of the name")
	}
}

// A certificate bounds the positions a node chooses among as it bounds
// its vnodes: --positions beyond it is refused, and 0 (all it may use)
// becomes its vnode count.
func TestCertificateBoundsPositions(t *testing.T) {
	b := &pki.Bundle{Self: pki.Identity{Name: "n1", Role: pki.RoleNode, Vnodes: 16, Machine: 7}}
	d := deploy.Options{Vnodes: 8, Positions: 32}
	if err := checkCertificate(b, &d, true); err == nil || !strings.Contains(err.Error(), "--positions 32") {
		t.Errorf("32 positions on a certificate of 16 vnodes: %v, want refused", err)
	}
	d = deploy.Options{Vnodes: 8}
	if err := checkCertificate(b, &d, true); err != nil || positions(b, d.Positions) != 16 {
		t.Errorf("positions 0 on a certificate of 16 vnodes: %d, %v; want 16", positions(b, d.Positions), err)
	}
}

// TestGivenIDsMustDerive: a node told its IDs (as triad up places its
// nodes) with derived IDs on takes positions derived from its address,
// vnode 0 first, and refuses any other: its peers would refuse them.
func TestGivenIDsMustDerive(t *testing.T) {
	o := DefaultOptions()
	o.Listen, o.Vnodes = "127.0.0.1:4100", 2
	o.IDs = []id.ID{ring.VnodeID(o.Listen, 0), ring.VnodeID(o.Listen, 9)}
	if _, err := o.assembly(); err != nil {
		t.Fatalf("derived positions refused: %v", err)
	}
	for _, ids := range [][]id.ID{
		{ring.VnodeID(o.Listen, 0), ring.VnodeID("127.0.0.1:4101", 1)}, // another address's
		{ring.VnodeID(o.Listen, 3), ring.VnodeID(o.Listen, 0)},         // vnode 0 not first
		{ring.VnodeID(o.Listen, 0), id.Spaced(1, 6)},                   // spaced, not derived
	} {
		o.IDs = ids
		if _, err := o.assembly(); err == nil || !strings.Contains(err.Error(), "not a position derived") {
			t.Errorf("IDs %v: %v, want refused", ids, err)
		}
	}
	o.IDs, o.DeriveIDs = []id.ID{id.Spaced(1, 6), id.Spaced(3, 6)}, false
	if _, err := o.assembly(); err != nil {
		t.Errorf("spaced IDs without derived IDs: %v", err)
	}
}

// --sync-period is periodic durability: the block store acknowledges
// copies once written (dhash AckWritten) and its engine commits at that
// interval; without it, copies are durable before acknowledged and the
// engine commits back to back. Maintenance's repairs do not wait for a
// period's commit either.
func TestOptionsSyncPeriod(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		interval time.Duration
		ack      bool
	}{
		{nil, -1, false},
		{[]string{"--sync-period", "20ms"}, 20 * time.Millisecond, true},
		{[]string{"--sync-interval", "2ms"}, 2 * time.Millisecond, false},
	} {
		o := DefaultOptions()
		fs := flag.NewFlagSet("node", flag.ContinueOnError)
		o.RegisterFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		a, err := o.assembly()
		if err != nil {
			t.Fatal(err)
		}
		if a.deploy.Maint == nil || a.deploy.Maint.NoWait != tc.ack {
			t.Errorf("%v: maintenance %+v, want its repairs' NoWait %v", tc.args, a.deploy.Maint, tc.ack)
		}
		if a.driver.Store.SyncInterval != tc.interval || a.deploy.Blocks.AckWritten != tc.ack {
			t.Errorf("%v: engine interval %v, AckWritten %v; want %v, %v", tc.args, a.driver.Store.SyncInterval, a.deploy.Blocks.AckWritten, tc.interval, tc.ack)
		}
	}
}
