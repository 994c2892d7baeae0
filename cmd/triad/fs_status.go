package main

import (
	"encoding/json"
	"io"
	"triad/internal/d2fs/fsadmin"
)

const statusAbout = `
Shows VOLUME as the nodes hold it:
  - its writer lease: the holding mount's ID, its expiry, and whether it is
    live (the mount may commit) or lapsed (a dead or stalled mount's, free
    for the next writer), or released (a clean unmount), or none (never
    held);
  - its last commit: the number, and its age by the writer's clock;
  - the bytes of its files at that commit (what df on a mount shows used);
  - the nodes that hold the superblock and the lease, the owner first, each
    ok, missing or no answer;
  - for each --addr node, whether D2 there is on the ring or still joining
    it, and its D2 store's usage and capacity.
Changes a mount has not committed yet are in no block the nodes hold, so
they are not shown: see the mount's log, or commit them with 'triad fs sync
DIR'. --json prints the same as one JSON object.`

func runFSStatus(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs status", "fs status VOLUME [--addr A,B] [--json]", statusAbout, stderr)
	ff := addFSFlags(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr(fs, "want one VOLUME")
	}
	ctx, cancel := signalContext(fsTimeout)
	defer cancel()
	b, err := ff.blocks()
	if err != nil {
		return err
	}
	defer b.Close()
	st := fsadmin.Status{Nodes: fsadmin.NodeStates(ctx, b, splitList(*ff.addrs))}
	err = st.Read(ctx, b, pos[0])
	if err != nil {
		err = ff.explain(err)
		st.Error = err.Error()
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(st); jerr != nil {
			return jerr
		}
	} else {
		st.Print(stdout)
	}
	return err
}
