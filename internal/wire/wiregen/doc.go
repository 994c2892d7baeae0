// Command wiregen writes internal/wire's message code from the message
// declarations there: each struct with a //wire:msg or //wire:struct line
// and a `wire:"N[,max=CONST][,noid]"` tag per field (internal/wire's
// doc.go). It writes msgs_gen.go (the type constants, the types table and
// every declaration's encode, decodeField and clone), the generated half
// of schema.proto, and appends the new numbers to testdata/types.txt.
//
//	go generate ./internal/wire    (runs: go run ./wiregen in internal/wire)
//
// Layer: a build tool; nothing imports it.
package main
