package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"triad/internal/client"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/wire"
)

// memStore is a block store in a map that defers the first puts it gets.
type memStore struct {
	mu     sync.Mutex
	blocks map[id.ID][]byte
	defer_ int // puts still to defer
	puts   int
}

func (m *memStore) Put(_ context.Context, data []byte, _ client.PutOptions) (id.ID, []wire.NodeRef, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.puts++
	if m.defer_ > 0 {
		m.defer_--
		return id.ID{}, nil, fmt.Errorf("%w: window full", fault.ErrBusy)
	}
	k := id.Key(data)
	m.blocks[k] = bytes.Clone(data)
	return k, nil, nil
}

func (m *memStore) Get(_ context.Context, key id.ID) ([]byte, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.blocks[key]
	if !ok {
		return nil, time.Time{}, fault.ErrNotFound
	}
	return b, time.Time{}, nil
}

func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestPutGetRoundTrip(t *testing.T) {
	for _, size := range []int{1, 1023, 1024, 1025, 10*1024 + 7} {
		s := &memStore{blocks: map[id.ID][]byte{}, defer_: 3}
		data := randomBytes(size)
		o := Options{Chunk: 1024}
		key, err := Put(context.Background(), s, data, o)
		if err != nil {
			t.Fatalf("%d bytes: put: %v", size, err)
		}
		wantBlocks := 1
		if size > 1024 {
			wantBlocks = (size+1023)/1024 + 1 // chunks and the manifest
		}
		if len(s.blocks) != wantBlocks {
			t.Errorf("%d bytes: %d blocks stored, want %d", size, len(s.blocks), wantBlocks)
		}
		if size <= 1024 && key != id.Key(data) {
			t.Errorf("%d bytes: a one-block file is named by its own hash", size)
		}
		got, err := Get(context.Background(), s, key, o)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%d bytes: get: %v (equal %v)", size, err, bytes.Equal(got, data))
		}
	}
}

func TestGetRefusesAChunkOfTheWrongLength(t *testing.T) {
	s := &memStore{blocks: map[id.ID][]byte{}}
	short := []byte("short chunk")
	k := id.Key(short)
	s.blocks[k] = short
	m := Manifest{Size: 20, Chunks: []Chunk{{Key: k, Len: 20}}}
	mk := id.Key(m.Encode())
	s.blocks[mk] = m.Encode()
	if _, err := Get(context.Background(), s, mk, Options{}); err == nil || !strings.Contains(err.Error(), "manifest says") {
		t.Fatalf("get of a manifest naming a chunk of the wrong length: %v", err)
	}
}

func TestGetReportsAMissingChunk(t *testing.T) {
	s := &memStore{blocks: map[id.ID][]byte{}}
	data := randomBytes(5000)
	key, err := Put(context.Background(), s, data, Options{Chunk: 1024})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := ParseManifest(s.blocks[key])
	delete(s.blocks, m.Chunks[2].Key)
	if _, err := Get(context.Background(), s, key, Options{}); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("get with chunk 2 missing: %v, want not found", err)
	}
}

func TestParseManifestRefusesMalformed(t *testing.T) {
	k := id.Key([]byte("x")).String()
	for name, text := range map[string]string{
		"no chunks":       magic + "size 3\n",
		"size not number": magic + "size x\n" + k + " 3\n",
		"zero size":       magic + "size 0\n" + k + " 0\n",
		"huge size":       magic + "size 99999999999999\n" + k + " 3\n",
		"bad key":         magic + "size 3\nzz 3\n",
		"short key":       magic + "size 3\nabcd 3\n",
		"too long":        magic + "size 3\n" + k + " 4\n",
		"do not add up":   magic + "size 5\n" + k + " 3\n",
		"negative":        magic + "size 3\n" + k + " -3\n",
		"chunk too large": magic + "size 99999999\n" + k + " 99999999\n",
	} {
		if _, err := ParseManifest([]byte(text)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add(Manifest{Size: 3, Chunks: []Chunk{{Key: id.Key([]byte("abc")), Len: 3}}}.Encode())
	f.Add([]byte(magic + "size 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			return
		}
		total := 0
		for _, c := range m.Chunks {
			if c.Len < 1 {
				t.Fatalf("accepted a chunk of %d bytes", c.Len)
			}
			total += c.Len
		}
		if total != m.Size || len(m.Chunks) == 0 {
			t.Fatalf("accepted a manifest whose %d chunks add up to %d, not %d", len(m.Chunks), total, m.Size)
		}
		again, err := ParseManifest(m.Encode())
		if err != nil || again.Size != m.Size || len(again.Chunks) != len(m.Chunks) {
			t.Fatalf("re-encoding does not parse the same: %v", err)
		}
	})
}

// A one-block file that reads as a manifest (someone stored a manifest
// as a file) comes back as itself, not as the file it names.
func TestAFileThatLooksLikeAManifest(t *testing.T) {
	s := &memStore{blocks: map[id.ID][]byte{}}
	inner, err := Put(context.Background(), s, randomBytes(5000), Options{Chunk: 1024})
	if err != nil {
		t.Fatal(err)
	}
	manifest := s.blocks[inner]
	key, err := Put(context.Background(), s, manifest, Options{Chunk: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Get(context.Background(), s, key, Options{})
	if err != nil || !bytes.Equal(got, manifest) {
		t.Fatalf("get of a stored manifest: %d bytes, %v; want the manifest's %d bytes", len(got), err, len(manifest))
	}
}

// A manifest naming a file larger than MaxSize is refused before Get
// allocates it.
func TestGetRefusesAHugeManifest(t *testing.T) {
	s := &memStore{blocks: map[id.ID][]byte{}}
	var m Manifest
	for i := 0; i < 2000; i++ {
		m.Chunks = append(m.Chunks, Chunk{Key: id.Key([]byte{byte(i), byte(i >> 8)}), Len: maxChunk})
		m.Size += maxChunk
	}
	b := m.Encode()
	k := id.Key(b)
	s.blocks[k] = b
	if _, err := Get(context.Background(), s, k, Options{}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("get of a manifest naming %d bytes: %v, want ErrTooLarge", m.Size, err)
	}
}
