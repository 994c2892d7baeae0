package files

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"triad/internal/dhash"
)

// MaxInputBytes bounds what ReadInput takes from standard input: the
// largest file, MaxChunks blocks of the largest size a deployment allows.
const MaxInputBytes = int64(MaxChunks) * dhash.MaxBlockLimit

// ReadInput reads the local file a command stores: the file name, or
// stdin (at most MaxInputBytes of it) if name is "-".
func ReadInput(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(io.LimitReader(stdin, MaxInputBytes))
	}
	return os.ReadFile(name)
}

// CheckOutput reports, before the work whose result goes to path, whether
// a file could be written there: the folder exists and takes a new file,
// or the file, if it exists, opens for writing. Nothing at path is
// created or changed.
func CheckOutput(path string) error {
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a folder", path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		return f.Close()
	}
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("cannot write %s: no folder %s", path, dir)
	}
	probe, err := os.CreateTemp(dir, ".triad-check-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	name := probe.Name()
	probe.Close()
	return os.Remove(name)
}

// WriteAtomic writes data to path through path.partial, renamed when
// written: a reader of path never sees part of it.
func WriteAtomic(path string, data []byte) error {
	tmp := path + ".partial"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
