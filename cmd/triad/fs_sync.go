package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

var syncAbout = help("sync")

func runFSSync(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs sync", "fs sync DIR", syncAbout, stderr)
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr(fs, "want the mount point DIR")
	}
	start := time.Now()
	d, err := os.Open(pos[0])
	if err != nil {
		return fmt.Errorf("%w (is a volume mounted there? 'triad fs mount VOLUME %s')", err, pos[0])
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("commit of the volume on %s: %w", pos[0], err)
	}
	fmt.Fprintf(stdout, "triad fs: every change on %s is committed (%v)\n", pos[0], time.Since(start).Round(time.Millisecond))
	return nil
}
