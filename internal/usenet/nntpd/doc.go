// Package nntpd is UsenetDHT's NNTP front-end (UsenetDHT §3.1, "Design
// overview", and §3.2, "Write and read walk-through": readers and feeds
// reach the site only through it, unaware that it is part of UsenetDHT).
// A Server serves NNTP for a usenet.Site: the reader commands (RFC 3977:
// GROUP, ARTICLE, OVER, HDR, NEWNEWS, POST, ...), the transit commands
// (IHAVE, and streaming feeds with CHECK and TAKETHIS, RFC 4644), AUTHINFO
// (RFC 4643) with the permissions a login or a peer's certificate grants
// (Users, Config.TLSPeer), and TAKEDHT, a peer site's announcement of an
// article stored in the DHT. The protocol's framing (lines, blocks,
// dot-stuffing, status codes) is internal/nntp's; what an article is and
// where it is kept, package usenet's. Accept's errors become replies by
// one rule: fault.ErrBusy is "try later" (431, 436), anything else a
// refusal for good (437, 439).
//
//	srv := nntpd.NewServer(nntpd.Config{Site: site, Users: users})
//	err := srv.Serve(ln)
//
// Layer: a blocking front-end above package usenet and nntp. It must not
// import the client, wire, dhash or the node runtime (node, ring, rpc,
// sim, tcp), peering, bench or cmd.
package nntpd
