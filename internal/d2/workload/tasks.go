package workload

import "fmt"

// The kinds of task a user does, each one or more access groups.

// randomDir picks a directory; with files set, one that holds a file
// (nil-safe: gives up after a few tries and returns -1).
func (us *User) randomDir(files bool) int {
	for range 32 {
		d := us.dirs[us.rng.IntN(len(us.dirs))]
		if !files || len(us.files(d)) > 0 {
			return d
		}
	}
	return -1
}

// files is directory d's live files.
func (us *User) files(d int) []int {
	var out []int
	for _, c := range us.fs.Children(d) {
		if !us.fs.Nodes[c].Dir {
			out = append(out, c)
		}
	}
	return out
}

// pick is up to n distinct random elements of xs.
func (us *User) pick(xs []int, n int) []int {
	xs = append([]int(nil), xs...)
	us.rng.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	return xs[:min(n, len(xs))]
}

// readPackage reads a directory and all its files, as a compiler reads a
// package.
func (us *User) readPackage() {
	d := us.randomDir(true)
	if d < 0 {
		return
	}
	us.readAll(d)
	for _, f := range us.files(d) {
		us.readAll(f)
	}
}

// grep reads every directory and file under a directory, in depth-first
// order; a subtree over MaxGrepBlocks is narrowed to one of its
// subdirectories, and cut if it has none.
func (us *User) grep() {
	d := us.randomDir(false)
	for {
		walk, blocks := us.subtree(d)
		var sub []int
		for _, c := range us.fs.Children(d) {
			if us.fs.Nodes[c].Dir {
				sub = append(sub, c)
			}
		}
		if blocks > us.cfg.MaxGrepBlocks && len(sub) > 0 {
			d = sub[us.rng.IntN(len(sub))]
			continue
		}
		budget := us.cfg.MaxGrepBlocks
		for _, i := range walk {
			for b := range us.fs.Blocks(i) {
				if budget == 0 {
					return
				}
				budget--
				us.emit(i, b, Read, us.fs.BlockKey(i, b), us.fs.BlockBytesOf(i, b))
			}
		}
		return
	}
}

// subtree is d and everything under it, depth first, and their blocks.
func (us *User) subtree(d int) (walk []int, blocks int) {
	stack := []int{d}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		walk = append(walk, i)
		blocks += int(us.fs.Blocks(i))
		ch := us.fs.Children(i)
		for j := len(ch) - 1; j >= 0; j-- {
			stack = append(stack, ch[j])
		}
	}
	return walk, blocks
}

// edit reads one to three files of a directory, thinks, then writes new
// versions of them and of the directory.
func (us *User) edit() {
	d := us.randomDir(true)
	if d < 0 {
		return
	}
	fs := us.pick(us.files(d), 1+us.rng.IntN(3))
	us.readAll(d)
	for _, f := range fs {
		us.readAll(f)
	}
	us.newGroup()
	for _, f := range fs {
		size := us.fs.Nodes[f].Size
		size += int64(us.rng.NormFloat64()*0.05*float64(size)) + us.rng.Int64N(400) - 100
		us.rewrite(f, max(size, 0))
	}
	us.rewriteDir(d, us.fs.Nodes[d].Size)
}

// browse lists one to four directories as `ls -l` does (the directory's
// blocks and the first block of each entry, where its attributes are),
// each a child or the parent of the last, reading up to three small files
// in each, with a think time between them.
func (us *User) browse() {
	d := us.randomDir(false)
	for g := range 1 + us.rng.IntN(4) {
		if g > 0 {
			us.newGroup()
		}
		us.readAll(d)
		for _, c := range us.fs.Children(d) {
			us.emit(c, 0, Read, us.fs.BlockKey(c, 0), us.fs.BlockBytesOf(c, 0))
		}
		var small []int
		for _, f := range us.files(d) {
			if us.fs.Nodes[f].Size <= 2*BlockBytes {
				small = append(small, f)
			}
		}
		for _, f := range us.pick(small, us.rng.IntN(4)) {
			us.readAll(f)
		}
		d = us.wander(d)
	}
}

// wander is a directory next to d: a subdirectory, or its parent.
func (us *User) wander(d int) int {
	var sub []int
	for _, c := range us.fs.Children(d) {
		if us.fs.Nodes[c].Dir {
			sub = append(sub, c)
		}
	}
	if len(sub) > 0 && us.rng.IntN(3) > 0 {
		return sub[us.rng.IntN(len(sub))]
	}
	if p := us.fs.Nodes[d].Parent; p >= 0 {
		return p
	}
	return d
}

// create makes one to five files in a directory, sized like the tree's
// files (at most 1 MiB), then writes the directory.
func (us *User) create() {
	d := us.randomDir(false)
	old := us.fs.Nodes[d].Size
	for range 1 + us.rng.IntN(5) {
		us.created++
		name := fmt.Sprintf("new%d_%d.go", us.id, us.created)
		size := min(us.sizes[us.rng.IntN(len(us.sizes))], 1<<20)
		f := us.fs.Create(d, name, false, size)
		us.writeAll(f)
	}
	us.rewriteDir(d, old)
}

// remove deletes one or two files of a directory, then writes the
// directory.
func (us *User) remove() {
	d := us.randomDir(true)
	if d < 0 {
		return
	}
	old := us.fs.Nodes[d].Size
	for _, f := range us.pick(us.files(d), 1+us.rng.IntN(2)) {
		n := us.fs.Nodes[f]
		us.deleteBlocks(f, n.Key.WithBlock(0, n.Version), us.fs.Blocks(f), n.Size)
		us.fs.Delete(f)
	}
	us.rewriteDir(d, old)
}
