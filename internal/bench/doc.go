// Package bench measures triad's parts on this machine against the limits
// of the machine itself, measured in the same run, so that "fast" always
// means "close to what this disk, CPU or loopback can do".
//
//   - Store times the storage engine (puts waiting for durability, gets,
//     reopening) beside a raw append-and-fdatasync file, as UsenetDHT §5.5
//     ("Storage performance") argues the design of adbd's storage.
//   - DHash starts real `triad node` processes on 127.0.0.1 (with
//     internal/proc, as Chaos, Flood and Limits do) and drives puts
//     and gets through them (UsenetDHT §6.5, "DHash microbenchmarks").
//   - NNTP feeds and reads articles through any NNTP server, triad's or
//     INN, with the shapes of INN's own benchmark, so both fit one table
//     (UsenetDHT §6.3). It talks through internal/nntp's Client, the same
//     framing code the server uses.
//   - FS copies a tree into a D2-FS mount on running nodes and reads it
//     back cold, beside the local disk, then reads directories as tasks
//     under D2's placement and a traditional DHT's (the D2 paper's §9,
//     "nodes and lookups per task").
//
// Each returns a result for the table and the final JSON line:
//
//	res, err := bench.Store(bench.StoreConfig{Dir: dir, Size: 64 << 10, Objects: 10000, Writers: 16})
//
// Each command's configuration (StoreConfig, DHashCommand, NNTPCommand,
// ChaosConfig, ...) implements Command: it registers and checks its
// flags, and runs to an Output that takes its table and JSON line, so
// that `triad bench` and `triad chaos` are one table in cmd/triad.
//
// Layer: a tool above the whole system, used by cmd/triad only. It may
// import the storage engine, the client, the drivers and the node
// packages; no package under internal/ may import it.
package bench
