package bench

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"triad/internal/d2/key"
	"triad/internal/d2client"
	"triad/internal/d2fs"
)

// The tasks of bench fs: D2's placement against the traditional DHT's
// (§9: "nodes and lookups per task") on the same running nodes. A task
// reads every file of one directory of the tree, as a user reading a
// package does. The sampled directories are written into two fresh
// volumes, one per placement (d2client's Config.Placement), and each task
// is then read through a fresh read-only handle of each. Per task it
// counts the nodes its reads go to (the distinct owners of its blocks, as
// the gateway's D2Stat names them), the replica groups that hold them
// (distinct holder lists; Table 2), and, when --metrics names the
// gateways' metrics pages, the lookup messages the gateways sent while
// the task's files were read (triad_d2_lookup_hops_total: a lookup that
// the gateway's own successor list answers sends none). The gateways'
// lookup caches are warm from the writes, as a long-running gateway's
// are: on a ring of a few nodes they know most ranges.

// FSTaskResult is one placement's tasks.
type FSTaskResult struct {
	Placement    string  `json:"placement"`
	Tasks        int     `json:"tasks"`
	Blocks       int     `json:"blocks"`
	NodesPerTask float64 `json:"nodes_per_task"`
	// GroupsPerTask is the replica groups (distinct holder lists) per task.
	GroupsPerTask float64 `json:"replica_groups_per_task"`
	// LookupMsgsPerTask is the gateways' lookup messages while a task's
	// files were read; -1 without --metrics.
	LookupMsgsPerTask float64 `json:"lookup_msgs_per_task"`
	MsPerTask         float64 `json:"ms_per_task"`
}

// fsTask is one directory's files, by their paths under the tree.
type fsTask struct {
	dir   string
	files []string
}

// pickTasks returns n directories of sums' files spread over the tree in
// walk order (every k-th directory), each with its files.
func pickTasks(sums []fileSum, n int) []fsTask {
	var all []fsTask
	for _, f := range sums {
		d := filepath.Dir(f.rel)
		if len(all) == 0 || all[len(all)-1].dir != d {
			all = append(all, fsTask{dir: d})
		}
		all[len(all)-1].files = append(all[len(all)-1].files, f.rel)
	}
	if n >= len(all) {
		return all
	}
	step := float64(len(all)) / float64(n)
	var out []fsTask
	for i := range n {
		out = append(out, all[int(float64(i)*step)])
	}
	return out
}

// benchTasks runs the tasks under both placements.
func benchTasks(open func(d2client.Placement) (*d2client.Blocks, error), tree string, tasks []fsTask, metrics []string, stderr io.Writer) ([]FSTaskResult, error) {
	var out []FSTaskResult
	for _, p := range []d2client.Placement{d2client.PlaceD2, d2client.PlaceBlock} {
		b, err := open(p)
		if err != nil {
			return nil, err
		}
		r, err := runTasks(b, p, tree, tasks, metrics)
		b.Close()
		if err != nil {
			return nil, fmt.Errorf("%s placement: %w", p, err)
		}
		fmt.Fprintf(stderr, "bench fs: %d tasks under %s placement: %.1f nodes, %.1f replica groups per task\n", r.Tasks, p, r.NodesPerTask, r.GroupsPerTask)
		out = append(out, r)
	}
	return out, nil
}

// runTasks writes the tasks' files into a fresh volume placed by p, reads
// each task back through a fresh read-only handle and counts, then
// removes the files.
func runTasks(b *d2client.Blocks, p d2client.Placement, tree string, tasks []fsTask, metrics []string) (FSTaskResult, error) {
	ctx := context.Background()
	res := FSTaskResult{Placement: p.String(), Tasks: len(tasks), LookupMsgsPerTask: -1}
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return res, err
	}
	b.AddKey(priv)
	// The paper's 8 KB blocks (§9): the task figures count its blocks.
	vol, err := d2fs.MkvolSized(ctx, b, priv, time.Now(), d2fs.BlockBytes)
	if err != nil {
		return res, err
	}
	cfg := d2fs.DefaultConfig()
	cfg.Writer = priv
	w, err := d2fs.Open(ctx, b, vol, false, cfg)
	if err != nil {
		return res, err
	}
	for _, t := range tasks {
		for _, f := range t.files {
			if err := writeTreeFile(ctx, w, tree, f); err != nil {
				return res, errors.Join(err, w.Close(ctx))
			}
		}
	}
	if err := w.Close(ctx); err != nil {
		return res, err
	}
	r, err := d2fs.Open(ctx, b, vol, true, d2fs.DefaultConfig())
	if err != nil {
		return res, err
	}
	var nodes, groups, lookups int
	var took time.Duration
	for _, t := range tasks {
		before, err := sumCounter(metrics, lookupMsgs)
		if err != nil {
			return res, errors.Join(err, r.Close(ctx))
		}
		start := time.Now()
		refs, err := readTask(ctx, r, t)
		took += time.Since(start)
		if err != nil {
			return res, errors.Join(err, r.Close(ctx))
		}
		after, err := sumCounter(metrics, lookupMsgs)
		if err != nil {
			return res, errors.Join(err, r.Close(ctx))
		}
		owners, holders, err := placeTask(ctx, b, refs)
		if err != nil {
			return res, errors.Join(err, r.Close(ctx))
		}
		nodes, groups, res.Blocks, lookups = nodes+owners, groups+holders, res.Blocks+len(refs), lookups+int(after-before)
	}
	if err := r.Close(ctx); err != nil {
		return res, err
	}
	n := float64(len(tasks))
	res.NodesPerTask, res.GroupsPerTask, res.MsPerTask = float64(nodes)/n, float64(groups)/n, float64(took.Milliseconds())/n
	if len(metrics) > 0 {
		res.LookupMsgsPerTask = float64(lookups) / n
	}
	return res, removeTasks(ctx, b, vol, priv, tasks)
}

// readTask reads every file of t and returns their blocks.
func readTask(ctx context.Context, f *d2fs.FS, t fsTask) ([]d2fs.BlockRef, error) {
	var refs []d2fs.BlockRef
	buf := make([]byte, 1<<20)
	for _, rel := range t.files {
		n, err := f.Walk(ctx, volPath(rel))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		for off := int64(0); ; {
			k, err := f.ReadAt(ctx, n, buf, off)
			off += int64(k)
			if err == io.EOF || k == 0 {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", rel, err)
			}
		}
		rs, err := f.BlockRefs(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		refs = append(refs, rs...)
	}
	return refs, nil
}

// placeTask asks where each of refs lives: the distinct owners and holder
// lists.
func placeTask(ctx context.Context, b *d2client.Blocks, refs []d2fs.BlockRef) (owners, groups int, err error) {
	ownerSet, groupSet := map[string]bool{}, map[string]bool{}
	for _, ref := range refs {
		hs, err := b.Holders(ctx, ref.Key, ref.Sum)
		if err != nil {
			return 0, 0, err
		}
		if len(hs) == 0 {
			continue
		}
		var addrs []string
		for _, h := range hs {
			addrs = append(addrs, h.Node.Node.Addr)
		}
		ownerSet[addrs[0]] = true
		slices.Sort(addrs)
		groupSet[strings.Join(addrs, ",")] = true
	}
	return len(ownerSet), len(groupSet), nil
}

// writeTreeFile copies tree/rel into f at /rel, making its directories.
func writeTreeFile(ctx context.Context, f *d2fs.FS, tree, rel string) error {
	data, err := os.ReadFile(filepath.Join(tree, rel))
	if err != nil {
		return err
	}
	d := f.Root()
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for _, name := range parts[:len(parts)-1] {
		next, err := f.Lookup(ctx, d, name)
		if errors.Is(err, syscall.ENOENT) {
			next, err = f.Mkdir(ctx, d, name, 0o755, uint32(os.Getuid()), uint32(os.Getgid()))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		d = next
	}
	n, err := f.Create(ctx, d, parts[len(parts)-1], 0o644, uint32(os.Getuid()), uint32(os.Getgid()))
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	if _, err := f.WriteAt(ctx, n, data, 0); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	return nil
}

// removeTasks removes the tasks' files and directories and commits, which
// deletes their blocks (the volume stays, empty).
func removeTasks(ctx context.Context, b *d2client.Blocks, vol key.Volume, priv ed25519.PrivateKey, tasks []fsTask) error {
	cfg := d2fs.DefaultConfig()
	cfg.Writer = priv
	f, err := d2fs.Open(ctx, b, vol, false, cfg)
	if err != nil {
		return err
	}
	var dirs []string
	for _, t := range tasks {
		d, err := f.Walk(ctx, volPath(t.dir))
		if err != nil {
			return errors.Join(err, f.Close(ctx))
		}
		for _, rel := range t.files {
			if err := f.Unlink(ctx, d, filepath.Base(rel)); err != nil {
				return errors.Join(err, f.Close(ctx))
			}
		}
		for p := t.dir; p != "." && !slices.Contains(dirs, p); p = filepath.Dir(p) {
			dirs = append(dirs, p)
		}
	}
	// Deepest first: a directory goes once its children have.
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, p := range dirs {
		parent, err := f.Walk(ctx, volPath(filepath.Dir(p)))
		if err != nil {
			return errors.Join(err, f.Close(ctx))
		}
		if err := f.Rmdir(ctx, parent, filepath.Base(p)); err != nil {
			return errors.Join(fmt.Errorf("%s: %w", p, err), f.Close(ctx))
		}
	}
	return f.Close(ctx)
}

// volPath is the path in the volume of rel, a path under the tree.
func volPath(rel string) string {
	if rel == "." {
		return "/"
	}
	return "/" + filepath.ToSlash(rel)
}

// lookupMsgs counts a gateway's lookup messages: the steps its lookups
// sent (a lookup its own successor list answers sends none).
const lookupMsgs = "triad_d2_lookup_hops_total"

var metricsClient = &http.Client{Timeout: 10 * time.Second}

// sumCounter adds up the counter name, without labels, over the metrics
// pages at urls (0 without any).
func sumCounter(urls []string, name string) (float64, error) {
	var total float64
	for _, u := range urls {
		resp, err := metricsClient.Get(u)
		if err != nil {
			return 0, fmt.Errorf("--metrics: %w", err)
		}
		found := false
		sc := bufio.NewScanner(io.LimitReader(resp.Body, 64<<20))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
				x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					resp.Body.Close()
					return 0, fmt.Errorf("--metrics %s: %s: %w", u, name, err)
				}
				total, found = total+x, true
			}
		}
		resp.Body.Close()
		if err := sc.Err(); err != nil {
			return 0, fmt.Errorf("--metrics %s: %w", u, err)
		}
		if !found {
			return 0, fmt.Errorf("--metrics %s has no %s (a node without --d2?)", u, name)
		}
	}
	return total, nil
}
