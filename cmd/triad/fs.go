package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"triad/internal/d2/key"
	"triad/internal/d2client"
	"triad/internal/d2fs"
	"triad/internal/d2fs/fsadmin"
)

var fsAbout = help("fs")

func runFS(args []string, stdout, stderr io.Writer) error {
	return runGroup("fs", fsAbout, map[string]func([]string, io.Writer, io.Writer) error{
		"mkvol":  runFSMkvol,
		"mount":  runFSMount,
		"ls":     runFSLs,
		"cat":    func(a []string, o, e io.Writer) error { return runFSGet("cat", a, o, e) },
		"get":    func(a []string, o, e io.Writer) error { return runFSGet("get", a, o, e) },
		"put":    runFSPut,
		"mkdir":  runFSMkdir,
		"mv":     runFSMv,
		"rm":     runFSRm,
		"stat":   runFSStat,
		"fsck":   runFSFsck,
		"sync":   runFSSync,
		"status": runFSStatus,
	}, args, stdout, stderr)
}

// fsTimeout bounds a command other than mount.
const fsTimeout = 10 * time.Minute

// fsFlags are the flags every fs command takes: the nodes and TLS; and,
// for the commands that write, the volume's key file.
type fsFlags struct {
	addrs *string
	tls   nodeFlags
	key   *string // nil for the commands that read only
}

// addFSWriteFlags is addFSFlags and --key, for the commands that change a
// volume.
func addFSWriteFlags(fs *flag.FlagSet) fsFlags {
	ff := addFSFlags(fs)
	ff.key = fs.String("key", "", "the volume's private key `file` (default: $XDG_CONFIG_HOME/triad/volumes/VOLUME.key)")
	return ff
}

func addFSFlags(fs *flag.FlagSet) fsFlags {
	n := addNodeFlags(fs, "")
	// --addr takes a list here: replace the flag nodeFlags added.
	f := fs.Lookup("addr")
	f.Usage = "comma-separated `addresses` of nodes that run D2 (tried in turn)"
	return fsFlags{addrs: n.addr, tls: n}
}

// blocks connects the store to the nodes at --addr.
func (f fsFlags) blocks() (*d2client.Blocks, error) { return f.blocksWith(d2client.PlaceD2) }

// blocksWith is blocks with placement p.
func (f fsFlags) blocksWith(p d2client.Placement) (*d2client.Blocks, error) {
	opt, err := f.tls.options()
	if err != nil {
		return nil, err
	}
	cfg := d2client.DefaultConfig(splitList(*f.addrs)...)
	cfg.Options, cfg.Placement = opt, p
	return d2client.New(cfg)
}

// explain adds what to do to the errors a user meets most.
func (f fsFlags) explain(err error) error {
	var joining *d2client.JoiningError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, d2client.ErrNoD2):
		return fmt.Errorf("%w\n  the nodes at --addr %s answer but run no D2: give nodes started with --d2", err, *f.addrs)
	case errors.As(err, &joining):
		return fmt.Errorf("%w\n  D2 runs on %s but is still joining the ring: %s; try again shortly, or see that node's log",
			err, strings.Join(joining.Addrs, ", "), fsadmin.JoiningHint)
	case errors.Is(err, d2client.ErrSettling):
		return fmt.Errorf("%w\n  the nodes at --addr %s run D2 and answered, but could not serve it yet: a node started or failed moments ago and D2's ring is settling (after a partition or the loss of a key's holders, up to 5 minutes); try again in a few seconds; 'triad fs status VOLUME' shows the holders", err, *f.addrs)
	case errors.Is(err, d2client.ErrNoNode):
		first := strings.Split(*f.addrs, ",")[0]
		return tlsHint(first, *f.tls.tls, fmt.Errorf("%w\n  is a node that runs --d2 listening at --addr %s?", err, *f.addrs))
	case errors.Is(err, d2fs.ErrLeased):
		return fmt.Errorf("%w\n  a writable mount holds the volume (or held it until it died: the lease lapses a minute later): write through the mount, or mount --ro", err)
	}
	return err
}

var mkvolAbout = help("mkvol")

func runFSMkvol(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs mkvol", "fs mkvol NAME [--key FILE] [--addr A,B]", mkvolAbout, stderr)
	ff := addFSWriteFlags(fs)
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr(fs, "want one NAME")
	}
	if key.CheckName(pos[0]) != nil {
		return usageErr(fs, "want one NAME, without ':', '/' or a newline, at most %d bytes", key.MaxNameBytes)
	}
	name := pos[0]
	ctx, cancel := signalContext(fsTimeout)
	defer cancel()
	b, err := ff.blocks()
	if err != nil {
		return err
	}
	defer b.Close()
	path, err := fsadmin.KeyPath(*ff.key, name)
	if err != nil {
		return err
	}
	vol, err := fsadmin.Mkvol(ctx, b, name, path)
	if err != nil {
		return ff.explain(err)
	}
	fmt.Fprintf(stdout, "%s\n", vol)
	fmt.Fprintf(stderr, "triad fs: the private key of volume %s is in %s: keep it; copy it to the machines that write the volume\n", name, path)
	return nil
}

// loadKey gives b the private key of volume vol (arg, as the user named
// it) from --key or the default file.
func (f fsFlags) loadKey(b *d2client.Blocks, arg string, vol key.Volume) (ed25519.PrivateKey, error) {
	return fsadmin.LoadKey(b, *f.key, arg, vol)
}

// signalContext is a context cancelled by SIGINT or SIGTERM, or after d.
func signalContext(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, func() { cancel(); stop() }
}

var mountAbout = help("mount")

func runFSMount(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs mount", "fs mount VOLUME DIR [--addr A,B] [--ro | --key FILE] [--writeback DURATION] [--lease DURATION]", mountAbout, stderr)
	ff := addFSWriteFlags(fs)
	ro := fs.Bool("ro", false, "mount read-only (no lease: any number of them)")
	writeback := fs.Duration("writeback", d2fs.DefaultConfig().WriteBack, "lazy mode: a close commits nothing, and changes wait at most this long (§3: 30 s); without it, every close of a changed file commits")
	lease := fs.Duration("lease", d2fs.DefaultConfig().LeaseTerm, "how long the writer's lease outlives a writable mount that dies (renewed every third of it; at least 3s)")
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageErr(fs, "want VOLUME and DIR")
	}
	if *lease < 3*time.Second {
		return usageErr(fs, "--lease %v: at least 3s", *lease)
	}
	if fi, err := os.Stat(pos[1]); err != nil || !fi.IsDir() {
		return usageErr(fs, "%s is not a directory", pos[1])
	}
	b, err := ff.blocks()
	if err != nil {
		return err
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	vol, err := fsadmin.Resolve(ctx, b, pos[0])
	if err != nil {
		return ff.explain(err)
	}
	cfg := d2fs.DefaultConfig()
	if !*ro {
		if cfg.Writer, err = ff.loadKey(b, pos[0], vol); err != nil {
			return err
		}
	}
	cfg.WriteBack, cfg.LeaseTerm = *writeback, *lease
	fs.Visit(func(f *flag.Flag) { cfg.Lazy = cfg.Lazy || f.Name == "writeback" })
	f, err := d2fs.Open(ctx, b, vol, *ro, cfg)
	if err != nil {
		return ff.explain(fmt.Errorf("volume %s: %w", pos[0], err))
	}
	unmount, err := d2fs.MountFS(pos[1], f)
	if err != nil {
		return errors.Join(fmt.Errorf("mount on %s: %w", pos[1], err), f.Close(context.Background()))
	}
	mode := "read-write"
	if *ro {
		mode = "read-only"
	}
	fmt.Fprintf(stdout, "triad fs: mounted %s (volume %s, commit %d) on %s, %s, through %s; SIGINT or SIGTERM unmounts\n",
		pos[0], vol, f.Stats().Gen, pos[1], mode, b.Good())
	return serveMount(unmount, f, pos[1], stdout, stderr)
}

// lastCommit commits a writable mount's changes before it unmounts, and
// says why they cannot be committed ("" if they were, or there are
// none): the lease was lost, or no node took the commit within a minute.
func lastCommit(f *d2fs.FS) string {
	if f.ReadOnly() {
		return ""
	}
	if lost := f.Stats().LeaseLost; lost != "" {
		return "the writer lease was lost (" + lost + ")"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.Sync(ctx); err != nil {
		return "the last commit failed (" + err.Error() + ")"
	}
	return ""
}

// warnPending tells the operator which changed paths an unmount now
// would drop, and how to keep them.
func warnPending(stderr io.Writer, dir, why string, pending []string) {
	fmt.Fprintf(stderr, "triad fs: not unmounting %s yet: %s, so these %d changed paths are not committed:\n", dir, why, len(pending))
	for _, p := range pending[:min(len(pending), 50)] {
		fmt.Fprintf(stderr, "  %s\n", filepath.Join(dir, p))
	}
	if len(pending) > 50 {
		fmt.Fprintf(stderr, "  ... and %d more\n", len(pending)-50)
	}
	fmt.Fprintf(stderr, "triad fs: they still read from %s: copy them out (or wait for the nodes and signal again: the unmount commits first), then send SIGINT again to unmount and drop what is left\n", dir)
}

// serveMount waits for SIGINT or SIGTERM and unmounts; a busy mount point
// stays mounted until the next signal. A writable mount commits first; if
// it cannot (the lease was lost, or no node takes the commit within a
// minute) and holds changes, the first signal lists them and leaves the
// mount up, so that nothing is dropped without a word.
func serveMount(unmount func() error, f *d2fs.FS, dir string, stdout, stderr io.Writer) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	warned := false
	for range sig {
		if !warned {
			if why := lastCommit(f); why != "" {
				if pending := f.Pending(); len(pending) > 0 {
					// Unmounted now, these changes would be dropped: say
					// which, and unmount at the next signal.
					warned = true
					warnPending(stderr, dir, why, pending)
					continue
				}
			}
		}
		err := unmount()
		if err == nil {
			fmt.Fprintf(stdout, "triad fs: unmounted %s\n", dir)
			return nil
		}
		fmt.Fprintf(stderr, "triad fs: unmount %s: %v (still mounted: close what uses it, then signal again)\n", dir, err)
	}
	return nil
}

// fsCommand is what the commands on a PATH share: the flags, the open
// volume, and the context.
type fsCommand struct {
	ff  fsFlags
	b   *d2client.Blocks
	f   *d2fs.FS
	ctx context.Context
	vol key.Volume
}

// openFS parses a command's flags, wants a count of positionals in npos
// (the first a PATH, or a VOLUME) and opens the volume, read-only unless
// write. closeFn commits (for a writer) and releases the lease.
func openFS(fs *flag.FlagSet, ff fsFlags, args []string, npos []int, write bool) (c *fsCommand, pos []string, closeFn func() error, err error) {
	pos, err = parseMixed(fs, args)
	if err != nil {
		return nil, nil, nil, err
	}
	if !slices.Contains(npos, len(pos)) {
		return nil, nil, nil, usageErr(fs, "wrong number of arguments")
	}
	c, closeFn, err = openParsed(ff, pos[0], write)
	return c, pos, closeFn, err
}

// openParsed is openFS once the arguments are parsed: arg is a PATH, or a
// bare VOLUME (fsck).
func openParsed(ff fsFlags, arg string, write bool) (c *fsCommand, closeFn func() error, err error) {
	// c.walk checks the path.
	vol, _, _ := strings.Cut(arg, ":")
	ctx, cancel := signalContext(fsTimeout)
	b, err := ff.blocks()
	if err != nil {
		cancel()
		return nil, nil, err
	}
	c = &fsCommand{ff: ff, b: b, ctx: ctx}
	v, err := fsadmin.Resolve(ctx, b, vol)
	cfg := d2fs.DefaultConfig()
	if err == nil && write {
		cfg.Writer, err = ff.loadKey(b, vol, v)
	}
	if err == nil {
		c.f, err = d2fs.Open(ctx, b, v, !write, cfg)
		if errors.Is(err, d2fs.ErrNoVolume) {
			err = fmt.Errorf("volume %s: %w (the registry names it, but its root is gone)", vol, err)
		}
	}
	if err != nil {
		b.Close()
		cancel()
		return nil, nil, ff.explain(err)
	}
	c.vol = v
	return c, func() error {
		defer cancel()
		defer b.Close()
		return ff.explain(c.f.Close(ctx))
	}, nil
}

// walk finds PATH's inode, saying which path is missing.
func (c *fsCommand) walk(arg string) (*d2fs.Inode, error) {
	p, err := fsadmin.ParsePath(arg)
	if err != nil {
		return nil, err
	}
	n, err := c.f.Walk(c.ctx, p.Path)
	if errors.Is(err, syscall.ENOENT) {
		return nil, fmt.Errorf("%s: no such file or directory", arg)
	}
	return n, c.ff.explain(err)
}

// parent finds the directory of PATH and its last name.
func (c *fsCommand) parent(arg string) (*d2fs.Inode, string, error) {
	p, err := fsadmin.ParsePath(arg)
	if err != nil {
		return nil, "", err
	}
	dir, name, err := p.Parent()
	if err != nil {
		return nil, "", err
	}
	d, err := c.walk(dir.String())
	return d, name, err
}

func runFSLs(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs ls", "fs ls VOLUME:/path [--addr A,B]", "Lists a directory of a volume (mode, size, time, name), or shows one file.", stderr)
	c, pos, closeFn, err := openFS(fs, addFSFlags(fs), args, []int{1}, false)
	if err != nil {
		return err
	}
	defer closeFn()
	n, err := c.walk(pos[0])
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 1, ' ', tabwriter.AlignRight)
	a := c.f.Attr(n)
	if a.Type != d2fs.TypeDir {
		printEntry(tw, path.Base(pos[0]), a)
		return tw.Flush()
	}
	ents, err := c.f.ReadDir(c.ctx, n)
	if err != nil {
		return err
	}
	for _, e := range ents {
		cn, err := c.f.Lookup(c.ctx, n, e.Name)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", pos[0], e.Name, err)
		}
		printEntry(tw, e.Name, c.f.Attr(cn))
	}
	return tw.Flush()
}

func printEntry(w io.Writer, name string, a d2fs.Attr) {
	m := os.FileMode(a.Mode & 0o777)
	switch a.Type {
	case d2fs.TypeDir:
		m |= os.ModeDir
	case d2fs.TypeSymlink:
		m |= os.ModeSymlink
	}
	fmt.Fprintf(w, "%v\t%d\t %s\t %s\t\n", m, a.Size, a.Mtime.UTC().Format("2006-01-02 15:04:05"), name)
}

func runFSGet(name string, args []string, stdout, stderr io.Writer) error {
	usage, about := "fs cat VOLUME:/path [--addr A,B]", "Writes a file of a volume to standard output."
	npos := []int{1}
	if name == "get" {
		usage, about, npos = "fs get VOLUME:/path [FILE] [--addr A,B]", "Copies a file of a volume to FILE (default: standard output).", []int{1, 2}
	}
	fs := newFlags("fs "+name, usage, about, stderr)
	c, pos, closeFn, err := openFS(fs, addFSFlags(fs), args, npos, false)
	if err != nil {
		return err
	}
	defer closeFn()
	n, err := c.walk(pos[0])
	if err != nil {
		return err
	}
	out, finish := stdout, func() error { return nil }
	if len(pos) == 2 && pos[1] != "-" {
		f, err := os.Create(pos[1])
		if err != nil {
			return err
		}
		out, finish = f, f.Close
	}
	if err := fsadmin.CopyOut(c.ctx, c.f, n, out); err != nil {
		finish()
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	return finish()
}

func runFSPut(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs put", "fs put VOLUME:/path [FILE] [--key FILE] [--addr A,B]", "Stores FILE (default: standard input) as a file of a volume, replacing one there, and commits.", stderr)
	c, pos, closeFn, err := openFS(fs, addFSWriteFlags(fs), args, []int{1, 2}, true)
	if err != nil {
		return err
	}
	in := io.Reader(os.Stdin)
	if len(pos) == 2 && pos[1] != "-" {
		f, err := os.Open(pos[1])
		if err != nil {
			closeFn()
			return err
		}
		defer f.Close()
		in = f
	}
	return errors.Join(putFile(c, pos[0], in), closeFn())
}

// putFile creates or empties the file at arg and writes in to it.
func putFile(c *fsCommand, arg string, in io.Reader) error {
	d, name, err := c.parent(arg)
	if err != nil {
		return err
	}
	if err := fsadmin.WriteFile(c.ctx, c.f, d, name, in); err != nil {
		return fmt.Errorf("%s: %w", arg, err)
	}
	return nil
}

func runFSMkdir(args []string, stdout, stderr io.Writer) error {
	return runFSWrite("fs mkdir", "fs mkdir VOLUME:/path [--key FILE] [--addr A,B]", "Makes a directory in a volume and commits.", args, stderr, 1,
		func(c *fsCommand, pos []string) error {
			d, name, err := c.parent(pos[0])
			if err != nil {
				return err
			}
			if _, err := c.f.Mkdir(c.ctx, d, name, 0o755, uint32(os.Getuid()), uint32(os.Getgid())); err != nil {
				return fmt.Errorf("%s: %w", pos[0], err)
			}
			return nil
		})
}

// runFSWrite runs a command that changes a volume: it parses args (npos
// positionals, the first a PATH), opens the volume writable, runs do and
// closes it, which commits what do changed.
func runFSWrite(name, usage, about string, args []string, stderr io.Writer, npos int, do func(c *fsCommand, pos []string) error) error {
	fs := newFlags(name, usage, about, stderr)
	c, pos, closeFn, err := openFS(fs, addFSWriteFlags(fs), args, []int{npos}, true)
	if err != nil {
		return err
	}
	return errors.Join(do(c, pos), closeFn())
}

func runFSMv(args []string, stdout, stderr io.Writer) error {
	return runFSWrite("fs mv", "fs mv VOLUME:/path NEWPATH [--key FILE] [--addr A,B]", "Renames a file or directory of a volume (NEWPATH is /path or VOLUME:/path in the same volume; a file there is replaced) and commits. The moved blocks stay where they are: the new entry points at them.", args, stderr, 2, func(c *fsCommand, pos []string) error {
		from, _ := fsadmin.ParsePath(pos[0])
		to := pos[1]
		if strings.HasPrefix(to, "/") {
			to = from.Volume + ":" + to
		}
		if p, err := fsadmin.ParsePath(to); err != nil || p.Volume != from.Volume {
			return fmt.Errorf("%s: not a path in volume %s", pos[1], from.Volume)
		}
		od, oname, err := c.parent(pos[0])
		if err != nil {
			return err
		}
		nd, nname, err := c.parent(to)
		if err != nil {
			return err
		}
		if err := c.f.Rename(c.ctx, od, oname, nd, nname, false); err != nil {
			return fmt.Errorf("mv %s %s: %w", pos[0], to, err)
		}
		return nil
	})
}

func runFSRm(args []string, stdout, stderr io.Writer) error {
	return runFSWrite("fs rm", "fs rm VOLUME:/path [--key FILE] [--addr A,B]", "Removes a file, symlink or empty directory of a volume and commits; its blocks are deleted.", args, stderr, 1, func(c *fsCommand, pos []string) error {
		n, err := c.walk(pos[0])
		if err != nil {
			return err
		}
		d, name, err := c.parent(pos[0])
		if err != nil {
			return err
		}
		if c.f.Attr(n).Type == d2fs.TypeDir {
			err = c.f.Rmdir(c.ctx, d, name)
		} else {
			err = c.f.Unlink(c.ctx, d, name)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", pos[0], err)
		}
		return nil
	})
}

var statFSAbout = help("stat-fs")

func runFSStat(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs stat", "fs stat VOLUME:/path [--addr A,B]", statFSAbout, stderr)
	c, pos, closeFn, err := openFS(fs, addFSFlags(fs), args, []int{1}, false)
	if err != nil {
		return err
	}
	defer closeFn()
	n, err := c.walk(pos[0])
	if err != nil {
		return err
	}
	a := c.f.Attr(n)
	fmt.Fprintf(stdout, "%s\n  type %s, mode %04o, size %d, uid %d, gid %d, mtime %s, inode %d\n  key %v\n",
		pos[0], typeName(a.Type), a.Mode, a.Size, a.Uid, a.Gid, a.Mtime.UTC().Format(time.RFC3339), a.Ino, n.Key())
	refs, err := c.f.BlockRefs(c.ctx, n)
	if err != nil {
		return c.ff.explain(err)
	}
	lines, failed := fsadmin.HolderLines(c.ctx, c.b, refs)
	fmt.Fprintf(stdout, "  %d blocks (volume/slots/deep/inode/block/version, then its holders, the owner first)\n", len(refs))
	for _, l := range lines {
		fmt.Fprintf(stdout, "  %s\n", l)
	}
	if failed > 0 {
		return fmt.Errorf("%s: the holders of %d of %d blocks could not be asked", pos[0], failed, len(refs))
	}
	return nil
}

func typeName(t d2fs.Type) string {
	switch t {
	case d2fs.TypeDir:
		return "directory"
	case d2fs.TypeSymlink:
		return "symlink"
	}
	return "file"
}

var fsckAbout = help("fsck")

func runFSFsck(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs fsck", "fs fsck VOLUME [--orphans] [--delete-orphans [--key FILE]] [--addr A,B]", fsckAbout, stderr)
	ff := addFSWriteFlags(fs)
	orphans := fs.Bool("orphans", false, "count the blocks no part of the newest commit points at")
	deleteOrphans := fs.Bool("delete-orphans", false, "delete those blocks (needs the volume's key and its writer's lease)")
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr(fs, "want one VOLUME")
	}
	c, closeFn, err := openParsed(ff, pos[0], *deleteOrphans)
	if err != nil {
		return err
	}
	defer closeFn()
	r, reachable, err := c.f.Reachable(c.ctx)
	if err != nil {
		return c.ff.explain(err)
	}
	fmt.Fprintf(stdout, "volume %s, commit %d: %d directories, %d files, %d symlinks, %d bytes, %d blocks checked, %d entries placed by hash, %d bad\n",
		pos[0], r.Gen, r.Dirs, r.Files, r.Symlinks, r.Bytes, r.Blocks, r.Hashed, len(r.Bad))
	for _, b := range r.Bad {
		fmt.Fprintf(stdout, "  bad: %s\n", b)
	}
	if len(r.Bad) > 0 {
		return fmt.Errorf("%d bad blocks or records in volume %s", len(r.Bad), pos[0])
	}
	if *orphans || *deleteOrphans {
		return c.orphans(stdout, r.Gen, reachable, *deleteOrphans)
	}
	return nil
}

// orphans counts, and with del deletes, the volume's orphaned blocks.
func (c *fsCommand) orphans(stdout io.Writer, gen uint32, reachable map[key.Key]bool, del bool) error {
	r, err := fsadmin.Orphans(c.ctx, c.b, c.vol, gen, reachable, del)
	if err != nil {
		return c.ff.explain(err)
	}
	if !del {
		fmt.Fprintf(stdout, "%d orphaned blocks (not in commit %d; --delete-orphans deletes them)\n", r.Found, gen)
		return nil
	}
	fmt.Fprintf(stdout, "%d orphaned blocks: %d deleted, %d of commit %d kept for readers, %d failed\n", r.Found, r.Deleted, r.Kept, gen-1, len(r.Failed))
	return r.Err()
}

// splitList splits a comma-separated flag, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
