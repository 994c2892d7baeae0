// Package usenet is UsenetDHT's news server (UsenetDHT §3.1, "Design
// overview"): an NNTP front-end (RFC 3977; streaming feeds, RFC 4644;
// AUTHINFO, RFC 4643) that keeps each article once, as a content-hash
// object, and keeps per site only what readers browse by: groups and their
// article numbers, the overview, and a history of message-ids.
//
// A Site is one site's state: its database (news.db, bbolt) and the Spool
// its articles live in, either a storage engine on this machine or the
// block store through the Go client. A fed article is acknowledged once it
// is durable in the spool and journaled, and listed in its groups just
// after (§3.2, "Write and read walk-through"); expiry is one policy per
// deployment, by group pattern (§3.3). A Server serves NNTP for a Site.
//
//	site, err := usenet.OpenSite(usenet.SiteConfig{Dir: dir, Spool: spool, PathHost: "news.example"})
//	srv := usenet.NewServer(usenet.Config{Site: site})
//	err = srv.Serve(ln)
//
// Layer: a blocking front-end outside the node, above client, dhash and
// store. Node-logic packages and the drivers must not import it.
package usenet
