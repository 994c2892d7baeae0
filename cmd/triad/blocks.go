package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"triad/internal/bench"
	"triad/internal/client"
	"triad/internal/dhash"
	"triad/internal/id"
	"triad/internal/wire"
)

// Files larger than one block are stored as chunks plus a manifest block
// that lists them; the manifest's key names the file.
const (
	manifestMagic = "triad-manifest 1\n"
	maxChunks     = 1 << 16
)

const putAbout = `
Stores FILE (or standard input, for "-") in the DHT through the node at --addr
and prints its key: the first 160 bits of the SHA-256 of its content, in hex.
The put returns once every copy is durable on its own host (2 replicas by
default, or a write quorum of 7-of-14 fragments with --redundancy fragments).

A file larger than --chunk is stored as chunks, each a block of its own, and a
manifest block listing them; the key printed is the manifest's, and 'triad get'
reassembles the file from it. A progress bar shows on a terminal.

A node whose write window is full defers the put; it is retried for up to a
minute.`

func runPut(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("put", "put FILE [--addr ADDR] [--expire DURATION] [--redundancy replicas|fragments]", putAbout, stderr)
	addr := fs.String("addr", "127.0.0.1:4001", "`address` of any node")
	expire := fs.Duration("expire", 30*24*time.Hour, "how long the DHT must keep the file")
	red := fs.String("redundancy", "", "replicas or fragments (default: the node's setting)")
	chunk := fs.Int("chunk", 1<<20, "largest block, in `bytes`; bigger files are chunked")
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr(fs, "want one FILE (or - for standard input)")
	}
	if *expire <= 0 || *chunk < 1024 || *chunk > dhash.MaxBlockLimit {
		return usageErr(fs, "--expire must be positive and --chunk from 1 KiB to %d bytes", dhash.MaxBlockLimit)
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
	data, err := readInput(pos[0])
	if err != nil {
		return err
	}
	if len(data) == 0 {
		return fmt.Errorf("%s is empty: there is nothing to store", pos[0])
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := client.DialCluster(ctx, *addr)
	if err != nil {
		return err
	}
	defer c.Close()
	var chunks [][]byte
	for off := 0; off < len(data); off += *chunk {
		chunks = append(chunks, data[off:min(off+*chunk, len(data))])
	}
	if len(chunks) > maxChunks {
		return fmt.Errorf("%s: %d chunks of %d bytes; at most %d (use a larger --chunk)", pos[0], len(chunks), *chunk, maxChunks)
	}
	keys := make([]id.ID, len(chunks))
	bar := progressTo(stderr)
	var p bench.Progress
	if bar != nil && len(chunks) > 1 {
		p = bar("put", int64(len(data)))
	}
	err = parallel(ctx, len(chunks), 8, func(i int) error {
		key, err := putRetry(ctx, c, chunks[i], opt)
		keys[i] = key
		if p != nil && err == nil {
			p.Add(len(chunks[i]))
		}
		return err
	})
	if p != nil {
		p.Finish()
	}
	if err != nil {
		return err
	}
	key := keys[0]
	if len(chunks) > 1 {
		var m bytes.Buffer
		fmt.Fprintf(&m, "%ssize %d\n", manifestMagic, len(data))
		for i, k := range keys {
			fmt.Fprintf(&m, "%s %d\n", k, len(chunks[i]))
		}
		if key, err = putRetry(ctx, c, m.Bytes(), opt); err != nil {
			return fmt.Errorf("storing the manifest: %w", err)
		}
	}
	fmt.Fprintln(stdout, key)
	return nil
}

// putRetry puts one block, retrying while the node defers it.
func putRetry(ctx context.Context, c *client.Cluster, data []byte, opt client.PutOptions) (id.ID, error) {
	deadline := time.Now().Add(time.Minute)
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		key, _, err := c.Put(ctx, data, opt)
		if !errors.Is(err, dhash.ErrDeferred) || time.Now().After(deadline) {
			return key, err
		}
		select {
		case <-ctx.Done():
			return id.ID{}, ctx.Err()
		case <-time.After(pause):
		}
	}
}

func readInput(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(io.LimitReader(os.Stdin, int64(maxChunks)*dhash.MaxBlockLimit))
	}
	return os.ReadFile(name)
}

// parallel runs fn(0..n-1) with at most width at once and returns the
// first error.
func parallel(ctx context.Context, n, width int, fn func(i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	for i := 0; i < n && ctx.Err() == nil; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(i); err != nil {
				cancel(err)
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

const getAbout = `
Fetches the block or file stored under KEY (as printed by 'triad put') through
the node at --addr, checks it against its key, and writes it to standard output
or to -o FILE. A manifest is followed: the chunks it lists are fetched, checked
and joined (--raw prints the manifest itself instead).`

func runGet(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("get", "get KEY [--addr ADDR] [-o FILE] [--raw]", getAbout, stderr)
	addr := fs.String("addr", "127.0.0.1:4001", "`address` of any node")
	out := fs.String("o", "", "write to this `file` instead of standard output")
	raw := fs.Bool("raw", false, "print a manifest block as is, without fetching its chunks")
	key, err := keyArg(fs, args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := client.DialCluster(ctx, *addr)
	if err != nil {
		return err
	}
	defer c.Close()
	data, _, err := c.Get(ctx, key)
	if err != nil {
		return err
	}
	if !*raw && bytes.HasPrefix(data, []byte(manifestMagic)) {
		if data, err = fetchChunks(ctx, c, data, progressTo(stderr)); err != nil {
			return err
		}
	}
	if *out == "" {
		_, err = stdout.Write(data)
		return err
	}
	return writeFileAtomic(*out, data)
}

// fetchChunks reassembles a file from its manifest.
func fetchChunks(ctx context.Context, c *client.Cluster, manifest []byte, bar func(string, int64) bench.Progress) ([]byte, error) {
	lines := strings.Split(strings.TrimSuffix(string(manifest[len(manifestMagic):]), "\n"), "\n")
	var size int
	if len(lines) < 2 || len(lines) > maxChunks+1 {
		return nil, errors.New("manifest: malformed")
	}
	if _, err := fmt.Sscanf(lines[0], "size %d", &size); err != nil || size < 1 || size > maxChunks*dhash.MaxBlockLimit {
		return nil, fmt.Errorf("manifest: bad size line %q", lines[0])
	}
	type chunk struct {
		key id.ID
		off int
		n   int
	}
	var chunks []chunk
	off := 0
	for _, l := range lines[1:] {
		k, n, ok := strings.Cut(l, " ")
		key, err := id.Parse(k, id.Bytes)
		length, err2 := strconv.Atoi(n)
		if !ok || err != nil || err2 != nil || length < 1 || off+length > size {
			return nil, fmt.Errorf("manifest: bad chunk line %q", l)
		}
		chunks = append(chunks, chunk{key, off, length})
		off += length
	}
	if off != size {
		return nil, fmt.Errorf("manifest: chunks add up to %d bytes, not %d", off, size)
	}
	data := make([]byte, size)
	var p bench.Progress
	if bar != nil {
		p = bar("get", int64(size))
		defer p.Finish()
	}
	return data, parallel(ctx, len(chunks), 8, func(i int) error {
		ch := chunks[i]
		b, _, err := c.Get(ctx, ch.key)
		if err != nil {
			return fmt.Errorf("chunk %d (%s): %w", i, ch.key.Short(), err)
		}
		if len(b) != ch.n {
			return fmt.Errorf("chunk %d: %d bytes, manifest says %d", i, len(b), ch.n)
		}
		copy(data[ch.off:], b)
		if p != nil {
			p.Add(len(b))
		}
		return nil
	})
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".partial"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

const statAbout = `
Asks the successors of KEY, through the node at --addr, what each holds: a
whole copy or a fragment, its size and expiry, or why it has none. The first
hosts listed are the key's home (2 for replicas, 14 for fragments); copies
placed past a host that was down sit further on.`

func runStat(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("stat", "stat KEY [--addr ADDR]", statAbout, stderr)
	addr := fs.String("addr", "127.0.0.1:4001", "`address` of any node")
	key, err := keyArg(fs, args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, *addr)
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
	key, err := id.Parse(pos[0], id.Bytes)
	if err != nil {
		return id.ID{}, usageErr(fs, "bad key %q: want %d hex digits", pos[0], 2*id.Bytes)
	}
	return key, nil
}
