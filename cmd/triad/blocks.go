package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"text/tabwriter"
	"time"

	"triad/internal/client"
	"triad/internal/dhash"
	"triad/internal/files"
	"triad/internal/id"
	"triad/internal/wire"
)

var putAbout = help("put")

func runPut(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("put", "put FILE [--addr ADDR] [--expire DURATION] [--redundancy replicas|fragments]", putAbout, stderr)
	node := addNodeFlags(fs, "`address` of any node")
	expire := addDurationFlag(fs, "expire", 30*24*time.Hour, "how long the DHT must keep the file (90m, 12h, 30d)")
	red := fs.String("redundancy", "", "replicas or fragments (default: the node's setting)")
	chunk := fs.Int("chunk", 1<<20, "largest block, in `bytes`; bigger files are chunked")
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr(fs, "want one FILE (or - for standard input)")
	}
	if *expire <= 0 {
		return usageErr(fs, "--expire %v: want a positive duration", *expire)
	}
	if *chunk < 1024 || *chunk > dhash.MaxBlockLimit {
		return usageErr(fs, "--chunk %d: want 1 KiB to %d bytes", *chunk, dhash.MaxBlockLimit)
	}
	opt := client.PutOptions{Expire: *expire}
	switch *red {
	case "":
	case "replicas":
		opt.Redundancy = wire.RedundancyReplicas
	case "fragments":
		opt.Redundancy = wire.RedundancyFragments
	default:
		return usageErr(fs, "--redundancy %q: want replicas or fragments", *red)
	}
	data, err := files.ReadInput(pos[0], os.Stdin)
	if err != nil {
		return err
	}
	if len(data) == 0 {
		return fmt.Errorf("%s is empty: there is nothing to store", pos[0])
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := node.target().Cluster(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	key, err := files.Put(ctx, c, data, files.Options{Chunk: *chunk, Put: opt, Progress: fileProgress(stderr)})
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	fmt.Fprintln(stdout, key)
	return nil
}

// fileProgress draws a bar for a chunked file on a terminal.
func fileProgress(w io.Writer) func(op string, total int64) files.Progress {
	bar := progressTo(w)
	if bar == nil {
		return nil
	}
	return func(op string, total int64) files.Progress { return bar(op, total) }
}

var getAbout = help("get")

func runGet(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("get", "get KEY [--addr ADDR] [-o FILE] [--raw]", getAbout, stderr)
	node := addNodeFlags(fs, "`address` of any node")
	out := fs.String("o", "", "write to this `file` instead of standard output")
	raw := fs.Bool("raw", false, "print a manifest block as is, without fetching its chunks")
	key, err := keyArg(fs, args)
	if err != nil {
		return err
	}
	if *out != "" {
		if err := files.CheckOutput(*out); err != nil {
			return usageErr(fs, "-o: %v", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := node.target().Cluster(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	var data []byte
	if *raw {
		data, _, err = c.Get(ctx, key)
	} else {
		data, err = files.Get(ctx, c, key, files.Options{Progress: fileProgress(stderr)})
	}
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = stdout.Write(data)
		return err
	}
	return files.WriteAtomic(*out, data)
}

var statAbout = help("stat")

func runStat(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("stat", "stat KEY [--addr ADDR]", statAbout, stderr)
	node := addNodeFlags(fs, "`address` of any node")
	key, err := keyArg(fs, args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := node.target().Dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	holders, err := c.Stat(ctx, key)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tnode\taddress\tholds\tsize\texpires")
	held := 0
	for i, h := range holders {
		what, size, exp := "nothing", "", h.Err
		if h.Err == "" {
			held++
			what = "replica"
			if h.Fragment {
				what = "fragment"
			}
			size = strconv.FormatUint(h.Size, 10)
			exp = time.Unix(0, h.Expiry).UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", i, h.Node.ID.Short(), h.Node.Addr, what, size, exp)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "%d of %d hosts asked hold a copy of %s\n", held, len(holders), key)
	return nil
}

// keyArg parses flags and the one KEY argument of get and stat.
func keyArg(fs *flag.FlagSet, args []string) (id.ID, error) {
	pos, err := parseMixed(fs, args)
	if err != nil {
		return id.ID{}, err
	}
	if len(pos) != 1 {
		return id.ID{}, usageErr(fs, "want one KEY")
	}
	key, err := client.ParseKey(pos[0])
	if err != nil {
		return id.ID{}, usageErr(fs, "%v", err)
	}
	return key, nil
}
