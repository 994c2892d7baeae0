package workload

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Manifest is a tree's directories and files, in the order a depth-first
// walk with names sorted meets them: the order they are created in every
// volume. Paths are relative to the tree's root, slash-separated; the root
// itself is not listed.
type Manifest struct {
	Entries []Entry
}

// Entry is one directory or regular file of a manifest.
type Entry struct {
	Path string
	Dir  bool
	Size int64 // bytes; 0 for a directory
}

// Counts is what a manifest holds.
type Counts struct {
	Files int   `json:"files"`
	Dirs  int   `json:"dirs"`
	Bytes int64 `json:"bytes"`
}

// Counts sums the manifest up.
func (m *Manifest) Counts() Counts {
	var c Counts
	for _, e := range m.Entries {
		if e.Dir {
			c.Dirs++
			continue
		}
		c.Files++
		c.Bytes += e.Size
	}
	return c
}

//go:embed testdata/gosrc.manifest.gz
var gosrc []byte

// DefaultCounts is what the embedded manifest of Go 1.26.8's src holds:
// 11,478 files, 1,324 directories counting src itself (1,323 listed), 127.6 MB.
var DefaultCounts = Counts{Files: 11478, Dirs: 1323, Bytes: 127562029}

// Default is the manifest of Go 1.26.8's src, committed with the code so
// that runs repeat on any machine (regenerate it with `triad sim d2 --tree
// $(go env GOROOT)/src --write-manifest
// internal/d2/workload/testdata/gosrc.manifest.gz`).
func Default() (*Manifest, error) { return Parse(bytes.NewReader(gosrc)) }

// ReadTree walks dir and lists its directories and regular files (symbolic
// links and other special files are left out).
func ReadTree(dir string) (*Manifest, error) {
	m := &Manifest{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if strings.ContainsAny(rel, "\n\r") {
			return fmt.Errorf("workload: %q: a newline in a path", rel)
		}
		switch {
		case d.IsDir():
			m.Entries = append(m.Entries, Entry{Path: rel, Dir: true})
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			m.Entries = append(m.Entries, Entry{Path: rel, Size: info.Size()})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("workload: reading %s: %w", dir, err)
	}
	if len(m.Entries) == 0 {
		return nil, fmt.Errorf("workload: %s holds no files", dir)
	}
	return m, nil
}

// Load reads a manifest file, gzipped or not.
func Load(file string) (*Manifest, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return m, nil
}

const header = "# triad d2 manifest v1: d PATH | f SIZE PATH"

// Parse reads a manifest, gzipped or not: a header line, then one line
// per entry, "d PATH" or "f SIZE PATH", parents before children.
func Parse(r io.Reader) (*Manifest, error) {
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("workload: manifest: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	m := &Manifest{}
	dirs := map[string]bool{".": true}
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if n == 1 {
			if line != header {
				return nil, fmt.Errorf("workload: manifest: line 1: want the header %q", header)
			}
			continue
		}
		e, err := parseEntry(line)
		if err != nil {
			return nil, fmt.Errorf("workload: manifest: line %d: %w", n, err)
		}
		if !dirs[path.Dir(e.Path)] {
			return nil, fmt.Errorf("workload: manifest: line %d: %q comes before its directory", n, e.Path)
		}
		if e.Dir {
			dirs[e.Path] = true
		}
		m.Entries = append(m.Entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("workload: manifest: %w", err)
	}
	if len(m.Entries) == 0 {
		return nil, fmt.Errorf("workload: manifest: no entries")
	}
	return m, nil
}

func parseEntry(line string) (Entry, error) {
	kind, rest, _ := strings.Cut(line, " ")
	switch kind {
	case "d":
		if !validPath(rest) {
			return Entry{}, fmt.Errorf("bad path %q", rest)
		}
		return Entry{Path: rest, Dir: true}, nil
	case "f":
		size, p, _ := strings.Cut(rest, " ")
		n, err := strconv.ParseInt(size, 10, 64)
		if err != nil || n < 0 {
			return Entry{}, fmt.Errorf("bad size %q", size)
		}
		if !validPath(p) {
			return Entry{}, fmt.Errorf("bad path %q", p)
		}
		return Entry{Path: p, Size: n}, nil
	}
	return Entry{}, fmt.Errorf("want d or f, not %q", kind)
}

func validPath(p string) bool {
	return p != "" && p != "." && path.Clean(p) == p && !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "../")
}

// WriteTo writes the manifest in the form Parse reads, gzipped.
func (m *Manifest) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	zw, err := gzip.NewWriterLevel(cw, gzip.BestCompression)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriter(zw)
	fmt.Fprintln(bw, header)
	for _, e := range m.Entries {
		if e.Dir {
			fmt.Fprintf(bw, "d %s\n", e.Path)
		} else {
			fmt.Fprintf(bw, "f %d %s\n", e.Size, e.Path)
		}
	}
	if err := bw.Flush(); err != nil {
		return cw.n, err
	}
	if err := zw.Close(); err != nil {
		return cw.n, err
	}
	return cw.n, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
