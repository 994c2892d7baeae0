// Package dhtspool is the Spool over the DHT client (UsenetDHT §3.1 and
// §3.2, "Write and read walk-through": a front-end stores each article in
// the DHT with put, keyed by its content hash, and any front-end fetches
// it with get). Each article is one block, stored with the deployment's
// redundancy through the node the client is connected to. The site's
// commit loop hands it whole batches (usenet.Spool.PutBatch); it cuts each
// into ClientPutBatch requests a frame can carry (a node sends the copies
// of a request's blocks to each replica host together, so they share its
// syncs), and ends each request's articles as its reply comes.
//
//	cl, err := client.DialCluster(ctx, nodeAddr)
//	spool := &dhtspool.Spool{Cluster: cl}
//	site, err := usenet.OpenSite(usenet.SiteConfig{Dir: dir, Spool: spool, PathHost: "news.example"})
//
// Layer: a blocking front-end outside the node, the news site's one
// window on the DHT. It is what lets package usenet stay clear of the
// client, the wire protocol and the node runtime.
package dhtspool
