package fsadmin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"syscall"

	"triad/internal/d2fs"
)

// Path is a PATH as the commands take it, VOLUME:/path, split.
type Path struct{ Volume, Path string }

// ParsePath splits VOLUME:/path and cleans the path.
func ParsePath(arg string) (Path, error) {
	vol, p, ok := strings.Cut(arg, ":")
	if !ok || vol == "" || !strings.HasPrefix(p, "/") {
		return Path{}, fmt.Errorf("%q is not VOLUME:/path", arg)
	}
	return Path{vol, path.Clean(p)}, nil
}

// String is the path as the user wrote it, cleaned.
func (p Path) String() string { return p.Volume + ":" + p.Path }

// Parent is the directory holding p, and p's last name; the root has
// none.
func (p Path) Parent() (Path, string, error) {
	dir, name := path.Split(p.Path)
	if name == "" {
		return Path{}, "", fmt.Errorf("%s: the root has no name", p)
	}
	return Path{p.Volume, path.Clean(dir)}, name, nil
}

// copyBuffer is the unit CopyOut reads and WriteFile writes.
const copyBuffer = 1 << 20

// CopyOut writes file n of f to w.
func CopyOut(ctx context.Context, f *d2fs.FS, n *d2fs.Inode, w io.Writer) error {
	if a := f.Attr(n); a.Type != d2fs.TypeFile {
		return syscall.EISDIR
	}
	buf := make([]byte, copyBuffer)
	for off := int64(0); ; {
		k, err := f.ReadAt(ctx, n, buf, off)
		if err != nil {
			return err
		}
		if k == 0 {
			return nil
		}
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
		off += int64(k)
	}
}

// WriteFile creates name in directory d (mode 0644, owned by this
// process's user), or empties the file there, and writes in to it. The
// change is committed with f's next commit.
func WriteFile(ctx context.Context, f *d2fs.FS, d *d2fs.Inode, name string, in io.Reader) error {
	n, err := f.Lookup(ctx, d, name)
	switch {
	case errors.Is(err, syscall.ENOENT):
		n, err = f.Create(ctx, d, name, 0o644, uint32(os.Getuid()), uint32(os.Getgid()))
	case err == nil:
		var zero uint64
		err = f.Setattr(ctx, n, d2fs.SetAttr{Size: &zero})
	}
	if err != nil {
		return err
	}
	buf := make([]byte, copyBuffer)
	for off := int64(0); ; {
		k, rerr := io.ReadFull(in, buf)
		if k > 0 {
			if _, err := f.WriteAt(ctx, n, buf[:k], off); err != nil {
				return err
			}
			off += int64(k)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}
