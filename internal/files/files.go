package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"triad/internal/client"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/wire"
)

// Store is what files needs of the block store; *client.Cluster and
// *client.Client have it.
type Store interface {
	Put(ctx context.Context, data []byte, opt client.PutOptions) (id.ID, []wire.NodeRef, error)
	Get(ctx context.Context, key id.ID) ([]byte, time.Time, error)
}

// Progress is told of bytes stored or fetched; the command draws a bar.
type Progress interface {
	Add(n int)
	Finish()
}

// Options modify Put and Get. Zero fields take the defaults.
type Options struct {
	// Chunk is the largest block, in bytes; a larger file is chunked.
	// Default 1 MiB.
	Chunk int
	// Width is how many chunks are in flight at once. Default 8.
	Width int
	// Put says how the blocks are stored (expiry, redundancy).
	Put client.PutOptions
	// Progress, if set, makes the Progress of a chunked file of total
	// bytes; op is "put" or "get".
	Progress func(op string, total int64) Progress
	// RetryFor bounds how long a deferred put is tried again. Default 1 min.
	RetryFor time.Duration
	// MaxSize is the largest file Get assembles: a manifest naming a larger
	// one is refused before anything is allocated. Default 4 GiB.
	MaxSize int
}

func (o Options) withDefaults() Options {
	if o.Chunk <= 0 {
		o.Chunk = 1 << 20
	}
	if o.Width <= 0 {
		o.Width = 8
	}
	if o.RetryFor <= 0 {
		o.RetryFor = time.Minute
	}
	if o.MaxSize <= 0 {
		o.MaxSize = 4 << 30
	}
	return o
}

// MaxChunks bounds the chunks of one file (and the lines of a manifest).
const MaxChunks = 1 << 16

// magic starts every manifest.
const magic = "triad-manifest 1\n"

// Errors Put and Get return.
var (
	// ErrTooManyChunks is returned by Put for a file that would need more
	// than MaxChunks chunks.
	ErrTooManyChunks = errors.New("files: too many chunks")
	// ErrTooLarge is returned by Get for a manifest naming a file larger
	// than Options.MaxSize.
	ErrTooLarge = errors.New("files: file too large")
)

// Put stores data and returns the key that names it: the block's own key,
// or for a file larger than one chunk the manifest's.
func Put(ctx context.Context, s Store, data []byte, o Options) (id.ID, error) {
	o = o.withDefaults()
	if len(data) == 0 {
		return id.ID{}, errors.New("files: empty file")
	}
	var chunks [][]byte
	for off := 0; off < len(data); off += o.Chunk {
		chunks = append(chunks, data[off:min(off+o.Chunk, len(data))])
	}
	if len(chunks) > MaxChunks {
		return id.ID{}, fmt.Errorf("%w: %d chunks of %d bytes, at most %d (use larger chunks)", ErrTooManyChunks, len(chunks), o.Chunk, MaxChunks)
	}
	// A one-block file is that block, unless it reads as a manifest: then it
	// gets a manifest of its own, so that Get returns it rather than follow it.
	if len(chunks) == 1 && !IsManifest(data) {
		return putRetry(ctx, s, data, o)
	}
	keys := make([]id.ID, len(chunks))
	var p Progress
	if o.Progress != nil {
		p = o.Progress("put", int64(len(data)))
		defer p.Finish()
	}
	err := parallel(ctx, len(chunks), o.Width, func(i int) error {
		key, err := putRetry(ctx, s, chunks[i], o)
		if err != nil {
			return fmt.Errorf("chunk %d: %w", i, err)
		}
		keys[i] = key
		if p != nil {
			p.Add(len(chunks[i]))
		}
		return nil
	})
	if err != nil {
		return id.ID{}, err
	}
	m := Manifest{Size: len(data)}
	for i, k := range keys {
		m.Chunks = append(m.Chunks, Chunk{Key: k, Len: len(chunks[i])})
	}
	key, err := putRetry(ctx, s, m.Encode(), o)
	if err != nil {
		return id.ID{}, fmt.Errorf("storing the manifest: %w", err)
	}
	return key, nil
}

// putRetry puts one block, trying again while the store defers it.
func putRetry(ctx context.Context, s Store, data []byte, o Options) (id.ID, error) {
	deadline := time.Now().Add(o.RetryFor)
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		key, _, err := s.Put(ctx, data, o.Put)
		if !errors.Is(err, fault.ErrBusy) || time.Now().After(deadline) {
			return key, err
		}
		select {
		case <-ctx.Done():
			return id.ID{}, ctx.Err()
		case <-time.After(pause):
		}
	}
}

// Get fetches the file named by key: the block itself, or, if it is a
// manifest, the chunks it lists, each checked against its length and
// joined. (Each block is checked against its key by the store's client.)
func Get(ctx context.Context, s Store, key id.ID, o Options) ([]byte, error) {
	o = o.withDefaults()
	data, _, err := s.Get(ctx, key)
	if err != nil || !IsManifest(data) {
		return data, err
	}
	m, err := ParseManifest(data)
	if err != nil {
		return nil, err
	}
	if m.Size > o.MaxSize {
		return nil, fmt.Errorf("%w: the manifest names a file of %d bytes, more than the %d allowed", ErrTooLarge, m.Size, o.MaxSize)
	}
	out := make([]byte, m.Size)
	offs := make([]int, len(m.Chunks))
	for i, off := 1, 0; i < len(m.Chunks); i++ {
		off += m.Chunks[i-1].Len
		offs[i] = off
	}
	var p Progress
	if o.Progress != nil {
		p = o.Progress("get", int64(m.Size))
		defer p.Finish()
	}
	return out, parallel(ctx, len(m.Chunks), o.Width, func(i int) error {
		c := m.Chunks[i]
		b, _, err := s.Get(ctx, c.Key)
		if err != nil {
			return fmt.Errorf("chunk %d (%s): %w", i, c.Key.Short(), err)
		}
		if len(b) != c.Len {
			return fmt.Errorf("chunk %d: %d bytes, the manifest says %d", i, len(b), c.Len)
		}
		copy(out[offs[i]:], b)
		if p != nil {
			p.Add(len(b))
		}
		return nil
	})
}

// Manifest lists the chunks of a file, in order.
type Manifest struct {
	Size   int
	Chunks []Chunk
}

// Chunk is one block of a file.
type Chunk struct {
	Key id.ID
	Len int
}

// IsManifest reports whether a block is a manifest.
func IsManifest(b []byte) bool { return bytes.HasPrefix(b, []byte(magic)) }

// Encode is the manifest's block.
func (m Manifest) Encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%ssize %d\n", magic, m.Size)
	for _, c := range m.Chunks {
		fmt.Fprintf(&b, "%s %d\n", c.Key, c.Len)
	}
	return b.Bytes()
}

// maxChunk bounds a chunk's length in a manifest: the largest block a frame
// carries. maxFile bounds its size line: MaxChunks such chunks.
const (
	maxChunk = wire.MaxFrameBytes
	maxFile  = MaxChunks * maxChunk
)

// ParseManifest decodes a manifest block, refusing anything malformed: a
// size out of bounds, a bad key or length, chunks that do not add up.
func ParseManifest(b []byte) (Manifest, error) {
	if !IsManifest(b) {
		return Manifest{}, errors.New("manifest: no magic line")
	}
	lines := strings.Split(strings.TrimSuffix(string(b[len(magic):]), "\n"), "\n")
	if len(lines) < 2 || len(lines) > MaxChunks+1 {
		return Manifest{}, fmt.Errorf("manifest: %d lines", len(lines))
	}
	var m Manifest
	size, ok := strings.CutPrefix(lines[0], "size ")
	n, err := strconv.Atoi(size)
	if !ok || err != nil || n < 1 || n > maxFile {
		return Manifest{}, fmt.Errorf("manifest: bad size line %q", lines[0])
	}
	m.Size = n
	total := 0
	for _, l := range lines[1:] {
		k, n, ok := strings.Cut(l, " ")
		key, err := id.Parse(k, id.Bytes)
		length, err2 := strconv.Atoi(n)
		if !ok || len(k) != 2*id.Bytes || err != nil || err2 != nil || length < 1 || length > maxChunk || length > m.Size-total {
			return Manifest{}, fmt.Errorf("manifest: bad chunk line %q", l)
		}
		m.Chunks = append(m.Chunks, Chunk{Key: key, Len: length})
		total += length
	}
	if total != m.Size {
		return Manifest{}, fmt.Errorf("manifest: chunks add up to %d bytes, not %d", total, m.Size)
	}
	return m, nil
}

// parallel runs fn(0..n-1) with at most width at once and returns the
// first error; after one, no more start.
func parallel(ctx context.Context, n, width int, fn func(i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	for i := 0; i < n && ctx.Err() == nil; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(i); err != nil {
				cancel(err)
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}
