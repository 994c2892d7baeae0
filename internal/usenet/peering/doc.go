// Package peering passes a news site's articles on to its peers
// (UsenetDHT §3.2, "Write and read walk-through": after an article is
// stored in the DHT, the front-end propagates it to its peers with
// TAKEDHT, headers and content key only, and each peer shares the
// announcement with its own, so that its existence is flooded to every
// front-end). Feeds runs one feeder per Peer: it reads the site's out log
// (usenet.List.ReadLog, written in the listing's own transaction), offers
// a batch with CHECK and sends what the peer wants, as TAKEDHT to a site
// of the same ring (Announce, Mesh) or as whole articles with TAKETHIS to
// a traditional server (Feed, as INN's innfeed does), and moves the peer's
// cursor past what it took or refused. A peer that cannot be reached is
// retried with backoff; its articles wait in the log, which is bounded.
//
//	feeds, err := peering.StartFeeds(peering.FeedConfig{Site: site, Peers: peers})
//	defer feeds.Close()
//
// Layer: a blocking front-end above package usenet and nntp (the client
// side of NNTP). It must not import the client, wire, dhash or the node
// runtime (node, ring, rpc, sim, tcp), nntpd, bench or cmd.
package peering
