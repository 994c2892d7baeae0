// Package client is the blocking, context-aware Go client of the block
// store: front-ends (the NNTP server, the CLI, benchmarks) put and get
// blocks through any node. One Client multiplexes any number of concurrent
// calls over one TCP connection; requests are batched into as few writes as
// the load allows. A Cluster keeps a client per node and sends each block
// operation straight to a holder of its key. Call asks one node one question
// on a connection of its own, as the CLI's commands do; a Target is the
// node a command names (its address and TLS bundle), and Ask types the
// reply it expects.
//
// It is the "DHT get / put call" a UsenetDHT front-end makes (UsenetDHT
// §3.1-3.2); the DHash operations it calls are those of package dhash.
//
//	c, err := client.Dial(ctx, "127.0.0.1:4000")
//	key, holders, err := c.Put(ctx, data, client.PutOptions{})
//	data, expiry, err := c.Get(ctx, key)
//
// Layer: outside the node, above dhash and wire. It speaks the wire format
// over its own connection; it must not import a driver (tcp, sim), the
// ring or the storage engine, and node-logic packages must not import it.
package client
