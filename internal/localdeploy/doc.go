// Package localdeploy is triad up's deployment: a small UsenetDHT on
// 127.0.0.1 in one process, Options.Sites news sites (internal/newsd),
// each with Options.Nodes nodes (internal/noded) of one ring, the sites
// peering in a full mesh that passes only headers (UsenetDHT §3), over
// mutual TLS with a CA made under the data folder. It is a loop over the
// daemons' own Options, in named steps (open the CA, start the nodes,
// wait until the ring is consistent, start the sites), with one Close that
// stops the sites, then the nodes. The sites open their news ports only
// once the ring can hold their articles.
//
//	d, err := localdeploy.Start(ctx, localdeploy.DefaultOptions(), newsd.DefaultOptions(), log, say)
//	defer d.Close()
//
// Layer: assembly, beside internal/noded and internal/newsd; only commands
// and tests import it.
package localdeploy
