package main

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"triad/internal/d2client"
	"triad/internal/d2fs"
)

const benchFSAbout = `
Measures D2-FS on running nodes (triad node --d2, at --addr) beside the local
disk, in the same run. A fresh volume is mounted here with FUSE; --tree (Go's
src by default) is copied in and the volume unmounted, which commits it: the
copy's MB/s and files/s count until every block is stored. A fresh read-only
mount then reads every file back (its cache empty: the blocks come from the
nodes), each checked against the source's SHA-256. The same copy to a folder
under --local-dir, with sync(2), and its read-back (from the page cache: the
disk is not asked again) are the comparison. The copies are removed at the
end (the volume stays, empty). Needs FUSE: root with /dev/fuse, or
fusermount3.

Then --tasks directories of the tree (spread over it) are written into two
fresh volumes, one with D2's placement (blocks at their keys) and one with
a traditional DHT's (blocks at a hash of their keys; §9's baseline), on the
same nodes, and each directory is read back as one task: the output gives
per task the nodes its reads went to, the replica groups holding its
blocks and, with --metrics (the gateways' metrics pages), the lookup
messages the gateways sent. --tasks 0 skips this part; --no-copy skips the copy.`

// fsBenchResult is one run of bench fs.
type fsBenchResult struct {
	Tree  string `json:"tree"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`

	D2Copy    fsBenchPhase `json:"d2_copy,omitzero"`
	D2Read    fsBenchPhase `json:"d2_read,omitzero"`
	LocalCopy fsBenchPhase `json:"local_copy,omitzero"`
	LocalRead fsBenchPhase `json:"local_read,omitzero"`

	Tasks []fsTaskResult `json:"tasks,omitempty"`
}

// fsBenchPhase is one timed pass over the tree.
type fsBenchPhase struct {
	Seconds     float64 `json:"seconds"`
	MBPerSec    float64 `json:"mb_per_s"`
	FilesPerSec float64 `json:"files_per_s"`
}

func (p *fsBenchPhase) done(start time.Time, bytes int64, files int) {
	p.Seconds = time.Since(start).Seconds()
	p.MBPerSec = float64(bytes) / 1e6 / p.Seconds
	p.FilesPerSec = float64(files) / p.Seconds
}

func runBenchFS(args []string, stdout, stderr io.Writer) error {
	flags := newFlags("bench fs", "bench fs [--addr A,B] [--tree DIR] [--local-dir DIR] [--tasks N] [--metrics URLS] [--no-copy] [--json]", benchFSAbout, stderr)
	ff := addFSFlags(flags)
	tree := flags.String("tree", "", "the `folder` to copy (default: $(go env GOROOT)/src)")
	localDir := flags.String("local-dir", os.TempDir(), "the local disk's copy goes in a new folder under this `folder`")
	asJSON := flags.Bool("json", false, "end with one JSON line of results")
	tasks := flags.Int("tasks", 20, "`directories` read as tasks under each placement (0: none)")
	metrics := flags.String("metrics", "", "comma-separated `URLs` of the gateways' metrics pages (http://HOST:PORT/metrics), to count lookups per task")
	noCopy := flags.Bool("no-copy", false, "skip the copy and read-back (and FUSE): only the tasks")
	if err := parse(flags, args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return usageErr(flags, "unexpected argument %q", flags.Arg(0))
	}
	if *tasks < 0 || *noCopy && *tasks == 0 {
		return usageErr(flags, "--tasks must be positive with --no-copy, and never negative")
	}
	var metricURLs []string
	for _, u := range strings.Split(*metrics, ",") {
		if u = strings.TrimSpace(u); u != "" {
			metricURLs = append(metricURLs, u)
		}
	}
	if *tree == "" {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			return fmt.Errorf("no --tree, and go env GOROOT: %w", err)
		}
		*tree = filepath.Join(strings.TrimSpace(string(out)), "src")
	}
	sums, res, err := hashTree(*tree)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "bench fs: %s: %d files, %.1f MB\n", *tree, res.Files, float64(res.Bytes)/1e6)
	b, err := ff.blocks()
	if err != nil {
		return err
	}
	defer b.Close()
	if !*noCopy {
		if err := benchD2(b, &res, sums, stderr); err != nil {
			return ff.explain(err)
		}
		if err := benchLocal(*localDir, &res, sums); err != nil {
			return err
		}
	}
	if *tasks > 0 {
		if res.Tasks, err = benchTasks(ff, *tree, pickTasks(sums, *tasks), metricURLs, stderr); err != nil {
			return ff.explain(err)
		}
	}
	if err := printBenchFS(stdout, res, *ff.addrs, *localDir, !*noCopy); err != nil {
		return err
	}
	return maybeJSON(stdout, *asJSON, res)
}

func printBenchFS(w io.Writer, res fsBenchResult, addrs, localDir string, copied bool) error {
	fmt.Fprintf(w, "%s: %d files, %.1f MB\n", res.Tree, res.Files, float64(res.Bytes)/1e6)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	if copied {
		fmt.Fprintln(tw, "\tcopy MB/s\tcopy files/s\tread MB/s\tread files/s\t")
		fmt.Fprintf(tw, "d2fs (nodes at %s)\t%.2f\t%.0f\t%.2f\t%.0f\t\n", addrs, res.D2Copy.MBPerSec, res.D2Copy.FilesPerSec, res.D2Read.MBPerSec, res.D2Read.FilesPerSec)
		fmt.Fprintf(tw, "local disk (%s; read from the page cache)\t%.2f\t%.0f\t%.2f\t%.0f\t\n", localDir, res.LocalCopy.MBPerSec, res.LocalCopy.FilesPerSec, res.LocalRead.MBPerSec, res.LocalRead.FilesPerSec)
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(res.Tasks) == 0 {
		return nil
	}
	fmt.Fprintf(w, "tasks (a directory's files read; %d tasks, %d and %d blocks):\n", res.Tasks[0].Tasks, res.Tasks[0].Blocks, res.Tasks[len(res.Tasks)-1].Blocks)
	fmt.Fprintln(tw, "placement\tnodes/task\treplica groups/task\tlookup msgs/task\tms/task\t")
	for _, t := range res.Tasks {
		lookups := "-"
		if t.LookupMsgsPerTask >= 0 {
			lookups = fmt.Sprintf("%.1f", t.LookupMsgsPerTask)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%s\t%.0f\t\n", t.Placement, t.NodesPerTask, t.GroupsPerTask, lookups, t.MsPerTask)
	}
	if len(res.Tasks) == 2 && res.Tasks[0].NodesPerTask > 0 {
		fmt.Fprintf(tw, "block / d2\t%.2fx\t%.2fx\t\t\t\n", res.Tasks[1].NodesPerTask/res.Tasks[0].NodesPerTask, res.Tasks[1].GroupsPerTask/max(res.Tasks[0].GroupsPerTask, 1))
	}
	return tw.Flush()
}

// fileSum is a file of the tree, by its path under the tree, and its SHA-256.
type fileSum struct {
	rel string
	sum [32]byte
}

// hashTree lists the regular files under dir in walk order (a directory's
// files together, as a reader of the tree meets them) with their SHA-256,
// and counts them.
func hashTree(dir string) ([]fileSum, fsBenchResult, error) {
	res := fsBenchResult{Tree: dir}
	var sums []fileSum
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sums = append(sums, fileSum{rel, sha256.Sum256(data)})
		res.Files++
		res.Bytes += int64(len(data))
		return nil
	})
	return sums, res, err
}

// benchD2 copies the tree into a new volume and reads it back through a
// second mount, then empties the volume.
func benchD2(b *d2client.Blocks, res *fsBenchResult, sums []fileSum, stderr io.Writer) error {
	ctx := context.Background()
	// A volume of its own, whose key lives only in this process.
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return err
	}
	b.AddKey(priv)
	vol, err := d2fs.Mkvol(ctx, b, priv, time.Now())
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "triad-bench-fs-")
	if err != nil {
		return err
	}
	defer os.Remove(dir)
	mount := func(ro bool) (func() error, error) {
		cfg := d2fs.DefaultConfig()
		cfg.Writer = priv
		f, err := d2fs.Open(ctx, b, vol, ro, cfg)
		if err != nil {
			return nil, err
		}
		unmount, err := d2fs.MountFS(dir, f)
		if err != nil {
			return nil, errors.Join(err, f.Close(ctx))
		}
		return unmount, nil
	}
	unmount, err := mount(false)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := copyTree(res.Tree, filepath.Join(dir, "tree")); err != nil {
		return errors.Join(err, unmount())
	}
	if err := unmount(); err != nil {
		return err
	}
	res.D2Copy.done(start, res.Bytes, res.Files)
	fmt.Fprintf(stderr, "bench fs: copied into volume %s in %.1f s\n", vol, res.D2Copy.Seconds)
	if unmount, err = mount(true); err != nil {
		return err
	}
	start = time.Now()
	err = checkTree(filepath.Join(dir, "tree"), sums)
	res.D2Read.done(start, res.Bytes, res.Files)
	if err = errors.Join(err, unmount()); err != nil {
		return err
	}
	if unmount, err = mount(false); err != nil {
		return err
	}
	return errors.Join(os.RemoveAll(filepath.Join(dir, "tree")), unmount())
}

// benchLocal is the same copy and read-back on the local disk.
func benchLocal(localDir string, res *fsBenchResult, sums []fileSum) error {
	dir, err := os.MkdirTemp(localDir, "triad-bench-fs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	if err := copyTree(res.Tree, filepath.Join(dir, "tree")); err != nil {
		return err
	}
	syscall.Sync()
	res.LocalCopy.done(start, res.Bytes, res.Files)
	start = time.Now()
	if err := checkTree(filepath.Join(dir, "tree"), sums); err != nil {
		return err
	}
	res.LocalRead.done(start, res.Bytes, res.Files)
	return nil
}

// copyTree copies directories, regular files and symlinks from src to a
// new dst, as cp -r does.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case e.IsDir():
			return os.Mkdir(to, 0o755)
		case e.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case e.Type().IsRegular():
			return copyFile(p, to)
		}
		return nil
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// checkTree reads every file sums lists under dir, in order, and checks
// its SHA-256.
func checkTree(dir string, sums []fileSum) error {
	for _, f := range sums {
		data, err := os.ReadFile(filepath.Join(dir, f.rel))
		if err != nil {
			return err
		}
		if sha256.Sum256(data) != f.sum {
			return fmt.Errorf("%s read back with other bytes", f.rel)
		}
	}
	return nil
}
