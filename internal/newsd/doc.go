// Package newsd assembles a news site: the NNTP server of internal/usenet
// over its site (groups, overview, history, journal), with articles in a
// local storage engine (one site, like INN) or in the DHT through a node
// (UsenetDHT §3: each site keeps about k/n of the articles and floods
// only headers), its article cache, its peers and feeds, AUTHINFO users,
// certificates, expiry and status page. Everything a site can be told is
// one Options struct, the same whether it comes from flags
// (RegisterFlags), the [nntp] table of a configuration file and its
// [[nntp.peer]] tables, or code (triad up, tests):
//
//	o := newsd.DefaultOptions()
//	o.Node = "127.0.0.1:4001"
//	s, err := newsd.Start(ctx, o, log)
//	defer s.Close()
//
// Layer: assembly, beside internal/deploy; only commands and tests import
// it. A real daemon: it must not import the simulator (issue 45; a test
// lie for its storage comes from internal/store/lie).
package newsd
