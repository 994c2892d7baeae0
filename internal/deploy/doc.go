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
// Layer: assembly. It imports the protocols, host and sim (for Factory);
// node-logic packages never import it.
package deploy
