package main

import (
	"encoding/json"
	"io"
	"triad/internal/d2fs/fsadmin"
)

var statusAbout = help("status")

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
