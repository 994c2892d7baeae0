// Package noded assembles a triad node process: the TCP driver
// (internal/tcp) listening with the node's storage under its data folder,
// the host built by internal/deploy (the Chord ring, congestion control,
// DHash's block store and Passing Tone's maintenance), its certificate
// bundle and CRL watch, and its status page and metrics. Everything a
// node can be told is one Options struct, the same whether it comes from
// flags (RegisterFlags), the [node] table of a configuration file or code
// (triad up, tests):
//
//	o := noded.DefaultOptions()
//	o.Listen, o.Join = "127.0.0.1:4002", "127.0.0.1:4001"
//	if err := o.Validate(); err != nil { ... }
//	n, err := noded.Start(ctx, o, log)
//	defer n.Close()
//
// Layer: assembly, beside internal/deploy; only commands and tests import
// it. A real daemon: it must not import the simulator (issue 45; a test
// lie for its storage comes from internal/store/lie). It names no protocol
// beyond the ring and the block store: it must not import d2 or tapestry,
// whose flags (--tapestry, --d2 and their tables) it offers from
// deploy.Extensions, where each protocol declares its settings.
package noded
