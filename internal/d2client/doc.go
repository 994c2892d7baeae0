// Package d2client is D2-FS's block store over the network: d2fs.Blocks
// on D2-Store's client API (put, get, delete, latest; messages D2Put,
// D2Get, D2Delete, D2Latest; D2Stat for Holders and D2List for List,
// under D2's placement or block placement: Config.Placement), the "client" of
// "Defragmenting DHT-based Distributed File Systems"
// (../shared/papers/d2-defragmented-dht-fs.txt, §3 and §7: any node is a
// gateway that finds a key's owner and talks to its replicas).
//
// A Blocks holds a list of node addresses and one pooled connection
// (client.Client) per address. Each call goes to the node that last
// answered; a node that cannot be reached, times out (Config.CallTimeout)
// or answers that it is busy, unavailable, without a route or without D2
// is left for the next one, for at most Config.Passes passes over the
// list. A put is retried only where that is safe: Put replaces, Delete is
// idempotent, and a PutIf whose earlier try may have landed is checked
// against the key's bytes before a conflict is believed. Every Get is
// checked against its SHA-256 here too, whatever the gateway did.
//
// Latest serves the ranges D2-FS asks, prefix ranges only: [lo, hi] where
// hi is the common prefix of lo and hi followed by 0xff bytes (a volume's
// superblocks) or lo == hi (the lease). D2Latest answers the greatest key
// with the prefix; a key below lo means none in the range. Any other range
// is refused with ErrRange.
//
// Every put (Put, PutIf) and delete is signed with the private key of the
// key's volume's writer, given with AddKey: D2's nodes refuse them
// otherwise (RELIABILITY E3), so without the key they fail here with
// ErrNoKey and nothing is sent. Reading needs no key. The name registry's
// records (key.Registry) are the exception: PutIf with a zero prev puts
// one unsigned, and any other write of a registry key is ErrNoKey.
//
// Holders (D2Stat) names a key's r holders and which of them keep its
// bytes, for triad fs stat: the client API's one view of the ring, as
// D2's lookups, neighbour lists, fetches and key lists are node-to-node
// messages, which a node refuses from a client.
//
//	b, err := d2client.New(d2client.Config{Addrs: []string{"10.0.0.1:4001", "10.0.0.2:4001"}})
//	defer b.Close()
//	_, priv, err := ed25519.GenerateKey(nil) // kept by the volume's writer
//	b.AddKey(priv)
//	vol, err := d2fs.Mkvol(ctx, b, priv, time.Now())
//	unmount, err := d2fs.Mount("/mnt/home", vol, b, priv) // nil: read-only
//
// Layer: front-end, outside node logic, beside internal/client: it blocks,
// keeps time and its connections run goroutines.
package d2client
