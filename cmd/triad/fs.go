package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
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
	err = fsadmin.Explain(err, *f.addrs)
	if errors.Is(err, d2client.ErrNoNode) {
		return tlsHint(strings.Split(*f.addrs, ",")[0], *f.tls.tls, err)
	}
	return err
}

var mkvolAbout = help("mkvol")

func runFSMkvol(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs mkvol", "fs mkvol NAME [--key FILE] [--addr A,B] [--block-kb N]", mkvolAbout, stderr)
	ff := addFSWriteFlags(fs)
	blockKB := fs.Int("block-kb", d2fs.DataBlockBytes>>10, fmt.Sprintf("the size of the volume's data blocks, in KiB: a power of two from %d (the paper's) to %d; larger blocks write and read large files faster, with fewer keys per file", d2fs.BlockBytes>>10, d2fs.MaxDataBlockBytes>>10))
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
	if kb := *blockKB; kb < d2fs.BlockBytes>>10 || kb > d2fs.MaxDataBlockBytes>>10 || kb&(kb-1) != 0 {
		return usageErr(fs, "--block-kb %d: want a power of two from %d to %d", kb, d2fs.BlockBytes>>10, d2fs.MaxDataBlockBytes>>10)
	}
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
	vol, err := fsadmin.Mkvol(ctx, b, name, path, *blockKB<<10)
	if err != nil {
		return ff.explain(err)
	}
	fmt.Fprintf(stdout, "%s\n", vol)
	fmt.Fprintf(stderr, "triad fs: the private key of volume %s is in %s: keep it; copy it to the machines that write the volume\n", name, path)
	return nil
}

// signalContext is a context cancelled by SIGINT or SIGTERM, or after d.
func signalContext(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, func() { cancel(); stop() }
}

var mountAbout = help("mount")

// checkMountpoint says why dir cannot be mounted on: not there, not a
// directory, or a FUSE mount whose process died, which stays until
// unmounted and answers ENOTCONN to everything.
func checkMountpoint(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, syscall.ENOTCONN):
		return fmt.Errorf("%s is a mount whose file system process is gone (transport endpoint is not connected): unmount it first (umount %s, or fusermount -u %s)", dir, dir, dir)
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s does not exist: make the directory first", dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

func runFSMount(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs mount", "fs mount VOLUME DIR [--addr A,B] [--ro | --key FILE] [--writeback DURATION] [--lease DURATION]", mountAbout, stderr)
	ff := addFSWriteFlags(fs)
	ro := fs.Bool("ro", false, "mount read-only (no lease: any number of them)")
	writeback := fs.Duration("writeback", d2fs.DefaultConfig().WriteBack, "lazy mode: a close commits nothing, and changes wait at most this long (§3: 30 s); without it, every close of a changed file commits")
	lease := fs.Duration("lease", d2fs.DefaultConfig().LeaseTerm, "how long the writer's lease outlives a writable mount that dies (renewed every third of it; at least 3s)")
	prof := addProfileFlag(fs, "the mount until it unmounts")
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
	if err := checkMountpoint(pos[1]); err != nil {
		return usageErr(fs, "%v", err)
	}
	b, err := ff.blocks()
	if err != nil {
		return err
	}
	defer b.Close()
	stopProfile, err := prof.start()
	if err != nil {
		return err
	}
	defer stopProfile()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	vol, err := fsadmin.Resolve(ctx, b, pos[0])
	if err != nil {
		return ff.explain(err)
	}
	cfg := d2fs.DefaultConfig()
	if !*ro {
		if cfg.Writer, err = fsadmin.LoadKey(b, *ff.key, pos[0], vol); err != nil {
			return err
		}
	}
	cfg.WriteBack, cfg.LeaseTerm = *writeback, *lease
	fs.Visit(func(f *flag.Flag) { cfg.Lazy = cfg.Lazy || f.Name == "writeback" })
	f, err := fsadmin.OpenNamed(ctx, b, pos[0], vol, *ro, cfg, fsadmin.SettleWait, func() {
		fmt.Fprintf(stderr, "triad fs: volume %s: its superblock is not listed yet (the ring may still be settling); trying for up to %v\n", pos[0], fsadmin.SettleWait)
	})
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
			if why := fsadmin.LastCommit(f, time.Minute); why != "" {
				if pending := f.Pending(); len(pending) > 0 {
					// Unmounted now, these changes would be dropped: say
					// which, and unmount at the next signal.
					warned = true
					fmt.Fprint(stderr, fsadmin.PendingWarning(dir, why, pending))
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

// fsCommand is what the commands on a PATH share: the flags, the store
// and the open volume.
type fsCommand struct {
	ff  fsFlags
	b   *d2client.Blocks
	ctx context.Context
	*fsadmin.Volume
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
	ctx, cancel := signalContext(fsTimeout)
	b, err := ff.blocks()
	if err == nil {
		c = &fsCommand{ff: ff, b: b, ctx: ctx}
		keyFile := ""
		if ff.key != nil {
			keyFile = *ff.key
		}
		if c.Volume, err = fsadmin.OpenVolume(ctx, b, arg, keyFile, write); err != nil {
			b.Close()
			err = ff.explain(err)
		}
	}
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return c, func() error {
		defer cancel()
		defer b.Close()
		return ff.explain(c.Close())
	}, nil
}

func runFSLs(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs ls", "fs ls VOLUME:/path [--addr A,B]", "Lists a directory of a volume (mode, size, time, name), or shows one file.", stderr)
	c, pos, closeFn, err := openFS(fs, addFSFlags(fs), args, []int{1}, false)
	if err != nil {
		return err
	}
	defer closeFn()
	ents, err := c.List(pos[0])
	if err != nil {
		return c.ff.explain(err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 1, ' ', tabwriter.AlignRight)
	for _, e := range ents {
		fmt.Fprintf(tw, "%v\t%d\t %s\t %s\t\n", fsadmin.FileMode(e.Attr), e.Size, e.Mtime.UTC().Format("2006-01-02 15:04:05"), e.Name)
	}
	return tw.Flush()
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
	if _, err := c.Walk(pos[0]); err != nil {
		return c.ff.explain(err)
	}
	out, finish := stdout, func() error { return nil }
	if len(pos) == 2 && pos[1] != "-" {
		f, err := os.Create(pos[1])
		if err != nil {
			return err
		}
		out, finish = f, f.Close
	}
	if err := c.Get(pos[0], out); err != nil {
		finish()
		return err
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
	return errors.Join(c.ff.explain(c.Put(pos[0], in)), closeFn())
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
	return errors.Join(c.ff.explain(do(c, pos)), closeFn())
}

func runFSMkdir(args []string, stdout, stderr io.Writer) error {
	return runFSWrite("fs mkdir", "fs mkdir VOLUME:/path [--key FILE] [--addr A,B]", "Makes a directory in a volume and commits.", args, stderr, 1,
		func(c *fsCommand, pos []string) error { return c.Mkdir(pos[0]) })
}

func runFSMv(args []string, stdout, stderr io.Writer) error {
	return runFSWrite("fs mv", "fs mv VOLUME:/path NEWPATH [--key FILE] [--addr A,B]", "Renames a file or directory of a volume (NEWPATH is /path or VOLUME:/path in the same volume; a file there is replaced) and commits. The moved blocks stay where they are: the new entry points at them.", args, stderr, 2,
		func(c *fsCommand, pos []string) error { return c.Move(pos[0], pos[1]) })
}

func runFSRm(args []string, stdout, stderr io.Writer) error {
	return runFSWrite("fs rm", "fs rm VOLUME:/path [--key FILE] [--addr A,B]", "Removes a file, symlink or empty directory of a volume and commits; its blocks are deleted.", args, stderr, 1,
		func(c *fsCommand, pos []string) error { return c.Remove(pos[0]) })
}

var statFSAbout = help("stat-fs")

func runFSStat(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs stat", "fs stat VOLUME:/path [--addr A,B]", statFSAbout, stderr)
	c, pos, closeFn, err := openFS(fs, addFSFlags(fs), args, []int{1}, false)
	if err != nil {
		return err
	}
	defer closeFn()
	n, err := c.Walk(pos[0])
	if err != nil {
		return c.ff.explain(err)
	}
	a := c.FS.Attr(n)
	fmt.Fprintf(stdout, "%s\n  type %s, mode %04o, size %d, uid %d, gid %d, mtime %s, inode %d\n  key %v\n",
		pos[0], fsadmin.TypeName(a.Type), a.Mode, a.Size, a.Uid, a.Gid, a.Mtime.UTC().Format(time.RFC3339), a.Ino, n.Key())
	refs, err := c.FS.BlockRefs(c.ctx, n)
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
	r, reachable, err := c.FS.Reachable(c.ctx)
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
	r, err := fsadmin.Orphans(c.ctx, c.b, c.ID, gen, reachable, del)
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
