// Package deploy is the one place that builds a host: the runtime
// (internal/host) and the protocols registered on it, in a fixed order,
// from a host's storage and options. The triad commands (over the TCP
// driver), the simulation experiments (internal/exp) and the tests all
// build hosts here, so a new protocol is wired in once.
//
//	n, err := deploy.New(deploy.DefaultOptions(), drv.Addr(), drv.Storage(), drv.Rand())
//	err = drv.Run(ctx, n)
//
//	s.AddHost(deploy.Factory(opts, func() node.Addr { return boot })) // in the simulator
//
// Layer: assembly. It imports the protocols and host; it must not import
// the simulator (Factory's type is the simulator's without naming it, so
// that the real daemons do not link the simulator, issue 45); node-logic
// packages never import it.
package deploy
