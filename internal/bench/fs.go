package bench

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"triad/internal/d2client"
	"triad/internal/d2fs"
)

// FSConfig is one run of FS.
type FSConfig struct {
	// Open connects to the nodes with a placement: D2's for the copy, and
	// each in turn for the tasks.
	Open func(d2client.Placement) (*d2client.Blocks, error)
	// Tree is the folder copied and sampled for tasks.
	Tree string
	// LocalDir holds the local disk's copy, in a new folder.
	LocalDir string
	// Tasks is the directories read as tasks under each placement (0:
	// none).
	Tasks int
	// Metrics are the gateways' metrics pages, to count lookups per task.
	Metrics []string
	// NoCopy skips the copy and read-back (and FUSE).
	NoCopy bool
	// Log gets progress lines.
	Log io.Writer
}

// FS measures D2-FS on running nodes beside the local disk (triad bench
// fs): the copy of cfg.Tree into a FUSE mount and its cold read-back,
// the same on the local disk, then the tasks under both placements.
func FS(cfg FSConfig) (FSResult, error) {
	sums, res, err := hashTree(cfg.Tree)
	if err != nil {
		return res, err
	}
	fmt.Fprintf(cfg.Log, "bench fs: %s: %d files, %.1f MB\n", cfg.Tree, res.Files, float64(res.Bytes)/1e6)
	if !cfg.NoCopy {
		b, err := cfg.Open(d2client.PlaceD2)
		if err != nil {
			return res, err
		}
		err = benchD2(b, &res, sums, cfg.Log)
		b.Close()
		if err != nil {
			return res, err
		}
		if err := benchLocal(cfg.LocalDir, &res, sums); err != nil {
			return res, err
		}
	}
	if cfg.Tasks > 0 {
		if res.Tasks, err = benchTasks(cfg.Open, cfg.Tree, pickTasks(sums, cfg.Tasks), cfg.Metrics, cfg.Log); err != nil {
			return res, err
		}
	}
	return res, nil
}

// FSResult is one run of bench fs.
type FSResult struct {
	Tree  string `json:"tree"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`

	D2Copy    FSPhase `json:"d2_copy,omitzero"`
	D2Read    FSPhase `json:"d2_read,omitzero"`
	LocalCopy FSPhase `json:"local_copy,omitzero"`
	LocalRead FSPhase `json:"local_read,omitzero"`

	Tasks []FSTaskResult `json:"tasks,omitempty"`
}

// FSPhase is one timed pass over the tree.
type FSPhase struct {
	Seconds     float64 `json:"seconds"`
	MBPerSec    float64 `json:"mb_per_s"`
	FilesPerSec float64 `json:"files_per_s"`
}

func (p *FSPhase) done(start time.Time, bytes int64, files int) {
	p.Seconds = time.Since(start).Seconds()
	p.MBPerSec = float64(bytes) / 1e6 / p.Seconds
	p.FilesPerSec = float64(files) / p.Seconds
}

// PrintFS writes res as tables: the copies' rates (if copied) and the
// tasks'.
func PrintFS(w io.Writer, res FSResult, addrs, localDir string, copied bool) error {
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
func hashTree(dir string) ([]fileSum, FSResult, error) {
	res := FSResult{Tree: dir}
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
func benchD2(b *d2client.Blocks, res *FSResult, sums []fileSum, stderr io.Writer) error {
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
func benchLocal(localDir string, res *FSResult, sums []fileSum) error {
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
