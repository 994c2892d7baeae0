// Package usenet is the storage model of UsenetDHT's news site (UsenetDHT
// §3.1, "Design overview"): each article is kept once, as a content-hash
// object, and each site keeps only what readers browse by: groups and
// their article numbers, the overview, and a history of message-ids.
// Articles are parsed and checked as RFC 5536 and RFC 5537 define them.
//
// A Site is one site's state, two sides composed: the Spool its articles
// live in (a storage engine on this machine, LocalSpool, or the DHT:
// package dhtspool), and its List (news.db, bbolt: groups, numbers,
// overview, history, and the out log of what its peers are yet to be
// sent), with a journal between them. The site's commit loop is the one
// batcher on the ingest path: it hands the spool whole batches
// (Spool.PutBatch, always asynchronous). An article is acknowledged only
// once it is durable in the spool and its listing durable in the journal,
// in one group commit, and is then listed in its groups, from memory until
// news.db's next checkpoint (§3.2, "Write and read walk-through"); if
// either fails it is refused with "try later"
// (fault.ErrBusy, the one temporary marker; any other failure is a
// refusal for good) and nothing of it is listed. Expiry is one policy per
// deployment, by group pattern (§3.3). The List knows articles by key
// only, so it can also list an article stored elsewhere: Site.Announce
// takes the headers and key a peer site announces (TAKEDHT, header
// flooding, §3.1), checked against the key (seal.go). A CachedSpool is
// the front-end's cache of articles read from the DHT (§3.1).
//
// The NNTP server is package nntpd's, the feeds to peer sites package
// peering's:
//
//	site, err := usenet.OpenSite(usenet.SiteConfig{Dir: dir, Spool: spool, PathHost: "news.example"})
//	srv := nntpd.NewServer(nntpd.Config{Site: site})
//	err = srv.Serve(ln)
//
// Layer: a blocking front-end outside the node, above nntp and the
// storage engine (store). It stores articles in the DHT only through a
// Spool that package dhtspool implements over the client: it must not
// import the client, wire, dhash or the node runtime (node, ring, rpc,
// sim, tcp), bench or cmd. Node-logic packages and the drivers must not
// import it.
package usenet
