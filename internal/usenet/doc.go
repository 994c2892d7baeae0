// Package usenet is UsenetDHT's news server (UsenetDHT §3.1, "Design
// overview"): an NNTP front-end (RFC 3977; streaming feeds, RFC 4644;
// AUTHINFO, RFC 4643; articles as RFC 5536 and RFC 5537 define them) that
// keeps each article once, as a content-hash object, and keeps per site
// only what readers browse by: groups and their article numbers, the
// overview, and a history of message-ids.
//
// A Site is one site's state, two sides composed: the Spool its articles
// live in (a storage engine on this machine, or the block store through
// the Go client), and its List (news.db, bbolt: groups, numbers, overview,
// history), with a journal between them. An article is acknowledged only
// once it is durable in the spool and listed in its groups (§3.2, "Write
// and read walk-through"); if either fails it is refused with "try later"
// and nothing of it is listed. Expiry is one policy
// per deployment, by group pattern (§3.3). The List knows articles by key
// only, so it can also list an article stored elsewhere: List.Add takes
// the entries a peer site announces (header flooding, §3.1). A Server
// serves NNTP for a Site; the protocol's framing (lines, blocks,
// dot-stuffing, status codes) is internal/nntp's.
//
//	site, err := usenet.OpenSite(usenet.SiteConfig{Dir: dir, Spool: spool, PathHost: "news.example"})
//	srv := usenet.NewServer(usenet.Config{Site: site})
//	err = srv.Serve(ln)
//
// Layer: a blocking front-end outside the node, above nntp, client, dhash
// and store. It reaches the DHT only through the client: it must not
// import the node runtime (node, ring, rpc, sim, tcp, wire), bench or
// cmd. Node-logic packages and the drivers must not import it.
package usenet
