// Command triad is the one binary of the triad DHT storage system: it runs
// nodes, inspects them, and runs simulations. `triad help` lists commands.
//
//	triad up                     # a small local ring on 127.0.0.1
//	triad put FILE; triad get KEY
//	triad nntp ...               # a news server (UsenetDHT), on the DHT or standalone
//	triad sim ring               # an experiment under virtual time
//	triad bench store            # a part against this machine's limits
//
// Layer: the top. It wires drivers, node logic, the storage engine and the
// front-ends together with flags and output; nothing imports it.
package main
