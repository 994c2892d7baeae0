package fsadmin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"triad/internal/d2/key"
	"triad/internal/d2client"
	"triad/internal/d2fs"
)

// Volume is a volume opened for one command on its paths (ls, get, put,
// mkdir, mv, rm, stat, fsck): the file system at its newest commit, read
// only or as the writer.
type Volume struct {
	FS  *d2fs.FS
	ID  key.Volume
	ctx context.Context
}

// OpenVolume opens the volume arg names (VOLUME or VOLUME:/path; the path
// is checked when it is walked), read-only unless write. A writer's key
// comes from keyFlag or the default key file, and the writer takes the
// volume's lease, which Close gives back after it commits.
func OpenVolume(ctx context.Context, b Store, arg, keyFlag string, write bool) (*Volume, error) {
	name, _, _ := strings.Cut(arg, ":")
	vol, err := Resolve(ctx, b, name)
	if err != nil {
		return nil, err
	}
	cfg := d2fs.DefaultConfig()
	if write {
		if cfg.Writer, err = LoadKey(b, keyFlag, name, vol); err != nil {
			return nil, err
		}
	}
	f, err := OpenNamed(ctx, b, name, vol, !write, cfg, SettleWait, nil)
	if err != nil {
		return nil, err
	}
	return &Volume{FS: f, ID: vol, ctx: ctx}, nil
}

// SettleWait is how long OpenNamed waits for a named volume's
// superblock to be found.
const SettleWait = 30 * time.Second

// OpenNamed opens volume vol, which the registry names name. Mkvol
// stores a volume's first superblock before it claims the name, so a
// named volume whose superblocks no holder lists (d2fs.ErrNoVolume) is
// one whose holders have not settled yet (a ring still forming, or
// moving nodes to balance load): OpenNamed tries again every second, up
// to wait, telling waiting (if not nil) once, before the error is
// final.
func OpenNamed(ctx context.Context, b Store, name string, vol key.Volume, ro bool, cfg d2fs.Config, wait time.Duration, waiting func()) (*d2fs.FS, error) {
	deadline := time.Now().Add(wait)
	for {
		f, err := d2fs.Open(ctx, b, vol, ro, cfg)
		if !errors.Is(err, d2fs.ErrNoVolume) {
			return f, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("volume %s: %w (the registry names it, but no holder has listed its superblock in %v)", name, err, wait)
		}
		if waiting != nil {
			waiting()
			waiting = nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("volume %s: %w (the registry names it; %w while waiting for its superblock)", name, err, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// Close commits a writer's changes and gives back its lease.
func (v *Volume) Close() error { return v.FS.Close(v.ctx) }

// Walk finds the inode of PATH (VOLUME:/path), saying which path is
// missing.
func (v *Volume) Walk(arg string) (*d2fs.Inode, error) {
	p, err := ParsePath(arg)
	if err != nil {
		return nil, err
	}
	n, err := v.FS.Walk(v.ctx, p.Path)
	if errors.Is(err, syscall.ENOENT) {
		return nil, fmt.Errorf("%s: no such file or directory", arg)
	}
	return n, err
}

// Parent finds the directory holding PATH, and PATH's last name.
func (v *Volume) Parent(arg string) (*d2fs.Inode, string, error) {
	p, err := ParsePath(arg)
	if err != nil {
		return nil, "", err
	}
	dir, name, err := p.Parent()
	if err != nil {
		return nil, "", err
	}
	d, err := v.Walk(dir.String())
	return d, name, err
}

// Entry is a name ls prints, with its attributes.
type Entry struct {
	Name string
	d2fs.Attr
}

// List is the entries of the directory at PATH, or the file there alone.
func (v *Volume) List(arg string) ([]Entry, error) {
	n, err := v.Walk(arg)
	if err != nil {
		return nil, err
	}
	a := v.FS.Attr(n)
	if a.Type != d2fs.TypeDir {
		p, _ := ParsePath(arg)
		_, name, _ := p.Parent()
		return []Entry{{name, a}}, nil
	}
	ents, err := v.FS.ReadDir(v.ctx, n)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(ents))
	for _, e := range ents {
		cn, err := v.FS.Lookup(v.ctx, n, e.Name)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", arg, e.Name, err)
		}
		out = append(out, Entry{e.Name, v.FS.Attr(cn)})
	}
	return out, nil
}

// Get writes the file at PATH to w.
func (v *Volume) Get(arg string, w io.Writer) error {
	n, err := v.Walk(arg)
	if err != nil {
		return err
	}
	if err := CopyOut(v.ctx, v.FS, n, w); err != nil {
		return fmt.Errorf("%s: %w", arg, err)
	}
	return nil
}

// Put creates or empties the file at PATH and writes in to it.
func (v *Volume) Put(arg string, in io.Reader) error {
	d, name, err := v.Parent(arg)
	if err != nil {
		return err
	}
	if err := WriteFile(v.ctx, v.FS, d, name, in); err != nil {
		return fmt.Errorf("%s: %w", arg, err)
	}
	return nil
}

// Mkdir makes the directory PATH (mode 0755, owned by this process's
// user).
func (v *Volume) Mkdir(arg string) error {
	d, name, err := v.Parent(arg)
	if err != nil {
		return err
	}
	if _, err := v.FS.Mkdir(v.ctx, d, name, 0o755, uint32(os.Getuid()), uint32(os.Getgid())); err != nil {
		return fmt.Errorf("%s: %w", arg, err)
	}
	return nil
}

// Move renames PATH to newPath, which is /path or VOLUME:/path in the
// same volume; a file there is replaced.
func (v *Volume) Move(arg, newPath string) error {
	from, err := ParsePath(arg)
	if err != nil {
		return err
	}
	to := newPath
	if strings.HasPrefix(to, "/") {
		to = from.Volume + ":" + to
	}
	if p, err := ParsePath(to); err != nil || p.Volume != from.Volume {
		return fmt.Errorf("%s: not a path in volume %s", newPath, from.Volume)
	}
	od, oname, err := v.Parent(arg)
	if err != nil {
		return err
	}
	nd, nname, err := v.Parent(to)
	if err != nil {
		return err
	}
	if err := v.FS.Rename(v.ctx, od, oname, nd, nname, false); err != nil {
		return fmt.Errorf("mv %s %s: %w", arg, to, err)
	}
	return nil
}

// Remove removes the file, symlink or empty directory at PATH.
func (v *Volume) Remove(arg string) error {
	n, err := v.Walk(arg)
	if err != nil {
		return err
	}
	d, name, err := v.Parent(arg)
	if err != nil {
		return err
	}
	if v.FS.Attr(n).Type == d2fs.TypeDir {
		err = v.FS.Rmdir(v.ctx, d, name)
	} else {
		err = v.FS.Unlink(v.ctx, d, name)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", arg, err)
	}
	return nil
}

// FileMode is a's type and permission bits as ls prints them.
func FileMode(a d2fs.Attr) os.FileMode {
	m := os.FileMode(a.Mode & 0o777)
	switch a.Type {
	case d2fs.TypeDir:
		m |= os.ModeDir
	case d2fs.TypeSymlink:
		m |= os.ModeSymlink
	}
	return m
}

// TypeName is what stat calls an entry of type t.
func TypeName(t d2fs.Type) string {
	switch t {
	case d2fs.TypeDir:
		return "directory"
	case d2fs.TypeSymlink:
		return "symlink"
	}
	return "file"
}

// Explain adds what to do to the errors a user of the fs commands meets
// most; addrs is the --addr the user gave.
func Explain(err error, addrs string) error {
	var joining *d2client.JoiningError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, d2client.ErrNoD2):
		return fmt.Errorf("%w\n  the nodes at --addr %s answer but run no D2: give nodes started with --d2", err, addrs)
	case errors.As(err, &joining):
		return fmt.Errorf("%w\n  D2 runs on %s but is still joining the ring: %s; try again shortly, or see that node's log",
			err, strings.Join(joining.Addrs, ", "), JoiningHint)
	case errors.Is(err, d2client.ErrSettling):
		return fmt.Errorf("%w\n  the nodes at --addr %s run D2 and answered, but could not serve it yet: a node started or failed moments ago and D2's ring is settling (after a partition or the loss of a key's holders, up to 5 minutes); try again in a few seconds; 'triad fs status VOLUME' shows the holders", err, addrs)
	case errors.Is(err, d2client.ErrNoNode):
		return fmt.Errorf("%w\n  is a node that runs --d2 listening at --addr %s?", err, addrs)
	case errors.Is(err, d2fs.ErrLeased):
		return fmt.Errorf("%w\n  a writable mount holds the volume (or held it until it died: the lease lapses a minute later): write through the mount, or mount --ro", err)
	}
	return err
}
