package noded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"triad/internal/client"
	"triad/internal/deploy"
	"triad/internal/id"
	"triad/internal/metrics"
	"triad/internal/node"
	"triad/internal/pki"
	"triad/internal/ring"
	"triad/internal/status"
	"triad/internal/store"
	"triad/internal/store/lie"
	deploysurvey "triad/internal/survey"
	"triad/internal/tcp"
	"triad/internal/wire"
)

// Node is a running node process: the driver and the host it runs.
type Node struct {
	// Addr is the address the node listens on.
	Addr string
	// Data is its data folder.
	Data string
	// Driver runs the host; Do reads its state.
	Driver *tcp.Driver
	// Host is the assembled host: the runtime and its protocols.
	Host *deploy.Node
	// HTTP serves the status page and metrics; nil without Options.HTTP.
	HTTP *metrics.Server
	// Page is what the status page shows (a news site adds itself); nil
	// without Options.HTTP.
	Page *status.Sources

	cancel context.CancelFunc
	done   chan error
}

// Start checks o, binds its address, opens its storage (the driver owns
// it), builds the host from it and runs it until ctx ends or Close.
func Start(ctx context.Context, o Options, log *slog.Logger) (*Node, error) {
	a, err := o.assembly()
	if err != nil {
		return nil, err
	}
	var rec *status.Recorder
	if o.HTTP != "" {
		// The status page shows the last warnings and errors.
		rec = status.NewRecorder(log.Handler(), 50)
		log = slog.New(rec)
	}
	a.driver.Log = log
	if a.driver.TLS, err = o.bundle(); err != nil {
		return nil, err
	}
	if err := checkCertificate(a.driver.TLS, &a.deploy, o.DeriveIDs); err != nil {
		return nil, err
	}
	a.deploy.Positions = positions(a.driver.TLS, a.deploy.Positions)
	a.deploy.Host.Version, a.deploy.Host.Disk = Version(), diskOf(a.driver.DataDir)
	if a.lie != 0 {
		a.driver.WrapEngine = func(e store.Engine) store.Engine { return lie.Engine(e, a.lie) }
	}
	drv, err := tcp.Listen(a.driver)
	if err != nil {
		return nil, err
	}
	n := &Node{Addr: drv.Addr(), Data: a.driver.DataDir, Driver: drv, done: make(chan error, 1)}
	if o.DeriveIDs && o.IDs == nil {
		if err := place(ctx, drv, a, log); err != nil {
			return nil, errors.Join(err, drv.Close())
		}
	}
	if err := n.build(a, o, rec, log); err != nil {
		return nil, errors.Join(err, drv.Close())
	}
	ctx, n.cancel = context.WithCancel(ctx)
	if a.driver.TLS != nil {
		go pki.WatchCRL(ctx, a.driver.TLS, log, func() {
			if c := drv.RecheckCertificates(); c > 0 {
				log.Warn("closed connections whose certificates the new CRL revokes", "connections", c)
			}
		})
	}
	go func() {
		err := drv.Run(ctx, n.Host)
		if n.HTTP != nil {
			err = errors.Join(err, n.HTTP.Close())
		}
		n.done <- err
	}()
	return n, nil
}

// bundle is the certificate bundle: Options.Bundle, or the one loaded
// from Options.TLS; nil for plain TCP.
func (o *Options) bundle() (*pki.Bundle, error) {
	if o.Bundle != nil || o.TLS == "" {
		return o.Bundle, nil
	}
	return pki.LoadBundle(o.TLS)
}

// checkCertificate holds the node to what its certificate names: its
// machine, and how many vnodes it may run (its peers refuse anything
// else).
func checkCertificate(b *pki.Bundle, d *deploy.Options, derived bool) error {
	if b == nil {
		return nil
	}
	self := b.Self
	if d.Machine != 0 && d.Machine != self.MachineID() {
		return fmt.Errorf("--machine is not the machine the certificate (%s) names: issue it with 'triad ca issue --machine'", self.Name)
	}
	d.Machine = self.MachineID()
	if derived && d.Vnodes > self.Vnodes {
		return fmt.Errorf("%d vnodes, but the certificate (%s) allows %d: issue it with 'triad ca issue --vnodes'", d.Vnodes, self.Name, self.Vnodes)
	}
	if derived && d.Positions > self.Vnodes {
		return fmt.Errorf("--positions %d, but the certificate (%s) allows the first %d: issue it with 'triad ca issue --vnodes'", d.Positions, self.Name, self.Vnodes)
	}
	return nil
}

// positions is --positions as the node uses it: 0 means all it may use,
// its certificate's vnode count, or ring.MaxVnodes without TLS.
func positions(b *pki.Bundle, p int) int {
	switch {
	case p != 0:
		return p
	case b != nil:
		return b.Self.Vnodes
	}
	return ring.MaxVnodes
}

// build seeds the IDs of a new node, builds the host from the driver's
// storage and starts the status page.
func (n *Node) build(a assembly, o Options, rec *status.Recorder, log *slog.Logger) error {
	drv := n.Driver
	if o.IDs != nil {
		if err := ring.SeedIDs(drv.Storage(), o.IDs); err != nil {
			return err
		}
	}
	h, err := deploy.New(a.deploy, drv.Addr(), drv.Storage(), drv.Rand())
	if err != nil {
		return fmt.Errorf("%s: %w", n.Data, err)
	}
	n.Host = h
	if len(h.Moved) > 0 {
		log.Warn("this node's saved vnode IDs are not positions it may use (derived from its listen address, below --positions or its certificate's vnode count, vnode 0 first): it left them, and its neighbours hand it what it now holds", "left", fmt.Sprint(h.Moved), "now", fmt.Sprint(h.State.IDs))
	}
	if o.HTTP == "" {
		return nil
	}
	mc := metrics.NewNode(drv, h)
	if n.HTTP, err = metrics.Listen(o.HTTP, metrics.NewRegistry(mc)); err != nil {
		return fmt.Errorf("--http %s: %w", o.HTTP, err)
	}
	name := o.Name
	if name == "" {
		name = "node " + drv.Addr()
	}
	n.Page = &status.Sources{Name: name, Node: mc.Snapshot, Store: mc.StoreStats, Log: rec,
		// The whole deployment from here, asked with this node's own
		// certificate: its requests are any client's.
		Deployment: &status.Deployment{Options: deploysurvey.Options{Addr: drv.Addr(), Bundle: a.driver.TLS}}}
	n.HTTP.Mux.Handle("/", status.Handler(n.Page))
	return nil
}

// Local is the node as a client in its own process reaches it
// (client.Options.Local): calls enter its event loop through a tcp.Local,
// with no socket, and a get of a block it holds reads its engine directly
// (readCopy).
func (n *Node) Local() *client.Local {
	return &client.Local{
		Addr:   n.Addr,
		Attach: func(deliver func(wire.Envelope)) client.Link { return n.Driver.Attach(deliver) },
		Read:   n.readCopy,
	}
}

// readCopy returns the node's own whole copy of key, read from its storage
// engine (which checks the record's CRCs, and quarantines a damaged copy
// for repair to replace). A fragment is not a whole copy: the caller asks
// the DHT, which gathers enough of them.
func (n *Node) readCopy(key id.ID) ([]byte, time.Time, error) {
	data, meta, err := n.Driver.Storage().Engine().Get(key)
	if err != nil {
		return nil, time.Time{}, err
	}
	if meta.Opaque {
		return nil, time.Time{}, fmt.Errorf("%w: %s: this node holds a fragment, not a whole copy", store.ErrNotFound, key.Short())
	}
	return data, meta.Expiry, nil
}

// Wait waits until the node has stopped (its context ended, or Close) and
// returns why it failed, if it did.
func (n *Node) Wait() error {
	err := <-n.done
	n.done <- err // for the next Wait
	return err
}

// Close stops the node (it leaves the ring gracefully) and waits for it.
func (n *Node) Close() error {
	n.cancel()
	return n.Wait()
}

// RingInfo is what each of the node's vnodes believes: its successor and
// predecessor lists (for ring.Check).
func (n *Node) RingInfo(ctx context.Context) ([]wire.VnodeInfo, error) {
	var out []wire.VnodeInfo
	err := n.Driver.Do(ctx, func(node.Env) { out = n.Host.Ring.RingInfo().Vnodes })
	return out, err
}

// JoinReportEvery is how often WaitJoined says why the node has not
// reached its ring yet.
var JoinReportEvery = 5 * time.Second

// WaitJoined waits until one of the node's vnodes has a successor on
// another host: it has reached the ring it was told to join through (a
// node that cannot would stand alone and fail every put with "too few
// live hosts"). Until then it calls report every JoinReportEvery with
// why not (what dialling join gives); after timeout (0: never) it gives
// up with that reason. It returns nil at once without join, and when ctx
// ends.
func (n *Node) WaitJoined(ctx context.Context, join string, timeout time.Duration, report func(string)) error {
	if join == "" {
		return nil
	}
	start := time.Now()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	lastReport := start
	for {
		joined := false
		if err := n.Driver.Do(ctx, func(node.Env) {
			for _, v := range n.Host.Ring.Vnodes() {
				for _, s := range v.Succs() {
					joined = joined || s.Addr != v.Self().Addr
				}
			}
		}); err != nil {
			return nil // stopping
		}
		waited := time.Since(start)
		if joined {
			if waited >= JoinReportEvery {
				report(fmt.Sprintf("joined the ring through %s after %v", join, waited.Round(time.Second)))
			}
			return nil
		}
		if timeout > 0 && waited >= timeout {
			return fmt.Errorf("no node of the ring reached through --join %s in %v (%s); is the address right and the node there running?", join, timeout, probe(join))
		}
		if time.Since(lastReport) >= JoinReportEvery {
			lastReport = time.Now()
			left := "retrying"
			if timeout > 0 {
				left = fmt.Sprintf("retrying, giving up in %v (--join-timeout)", (timeout - waited).Round(time.Second))
			}
			report(fmt.Sprintf("not in a ring yet after %v: --join %s: %s; %s", waited.Round(time.Second), join, probe(join), left))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// probe says what a TCP connection to addr gives.
func probe(addr string) string {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err.Error()
	}
	c.Close()
	return "it accepts connections but has not answered as a ring member"
}
