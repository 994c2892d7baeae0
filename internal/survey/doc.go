// Package survey is triad status (issue 47): a deployment's state taken
// from any one of its nodes. It walks the ring from that node (each
// node's successors, predecessors and fingers, as GetRingInfo gives
// them), asks every node found what its protocols say (maintenance, D2,
// Tapestry), and, given a news site, asks it and each site it feeds for
// their feeds (triad news's XPEERS and XFEEDS). What needs the operator
// is a Problem, said in one line.
//
// It is a client of the daemons' own requests, bounded in time per call
// and in nodes per walk; a node down is one that does not answer, and a
// node seen in an earlier survey (Options.Known) is asked again, so that
// one killed stays named after its neighbours have dropped it.
//
// Layer: a client, beside internal/client; only commands and tests import
// it.
package survey
