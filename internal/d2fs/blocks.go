package d2fs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/google/btree"

	"triad/internal/d2/key"
	"triad/internal/fault"
)

// Errors a Blocks implementation returns (wrapped with %w as it likes):
// refinements of the one error vocabulary (internal/fault), so that
// errors.Is(err, fault.ErrNotFound) holds for ErrNotFound too, and a
// command or a reply maps them as it maps any other.
var (
	// ErrNotFound: no replica holds the key (Get, Latest).
	ErrNotFound = fault.New(fault.ErrNotFound, "d2fs: block not found")
	// ErrCorrupt: replicas answered, but none with bytes whose SHA-256 is
	// the pointer's sum (Get).
	ErrCorrupt = fault.New(fault.ErrCorrupt, "d2fs: block does not match its hash")
	// ErrConflict: PutIf found another block than the one expected (a
	// bad request, as store.ErrConflict is).
	ErrConflict = fault.New(fault.ErrBadRequest, "d2fs: block changed under a conditional put")
)

// Blocks is the block store D2-FS runs on: D2-Store (§3) over the
// network, or MemBlocks in tests. Keys are 64-byte D2 keys; a block is at
// most BlockBytes bytes. Every method may be called from several
// goroutines at once. The file system writes a key at most once with a
// given content except for the lease key (PutIf) and for the blocks of a
// commit that crashed before its superblock, which the next commit
// overwrites.
type Blocks interface {
	// Put stores data under k, replacing what k held, and returns once
	// the block is durable (on its r replicas, or as many as the store
	// promises). The store keeps no reference to data.
	Put(ctx context.Context, k key.Key, data []byte) error

	// PutIf stores data under k only if k now holds a block whose SHA-256
	// is prev, or, with prev all zero, only if k holds nothing; otherwise
	// it stores nothing and returns ErrConflict. The check and the store
	// are one atomic step with respect to every other PutIf on k (over
	// the network: decided by one node, the key's primary, and
	// replicated before it returns): this is what makes the writer lease
	// and the commit a fence between two mounts (see lease.go). The file
	// system uses it only for the lease and the superblocks.
	PutIf(ctx context.Context, k key.Key, prev [32]byte, data []byte) error

	// Get returns the bytes stored under k whose SHA-256 is sum, trying
	// other replicas when one answers with other bytes; it returns
	// ErrCorrupt when none matches and ErrNotFound when none holds k. It
	// never returns bytes that do not hash to sum.
	Get(ctx context.Context, k key.Key, sum [32]byte) ([]byte, error)

	// Delete removes k; deleting a key that is absent is not an error.
	// The file system deletes only blocks that no commit newer than
	// Config.KeepOld points at. (Who may write is the store's policy:
	// D2's nodes take puts and deletes only signed by the volume's
	// writer, whose key d2client holds.)
	Delete(ctx context.Context, k key.Key) error

	// Latest returns the greatest key stored in [lo, hi] (byte order)
	// and its bytes, or ErrNotFound. It must see every Put and PutIf
	// that returned before it was called (over the network: ask every
	// replica of the range, take the greatest), or a remount may come up
	// on an older commit. The bytes are not verified (there is no
	// pointer to check them against): the caller checks them. The file
	// system asks it only for the newest superblock (a range of one
	// file's versions) and for the lease (lo == hi).
	Latest(ctx context.Context, lo, hi key.Key) (key.Key, []byte, error)
}

// MemBlocks is Blocks in memory, for tests: one copy of each block, and
// hooks that make a Get fail, a block's bytes go bad, or a Put fail, to
// test what the file system does then. Safe for concurrent use.
type MemBlocks struct {
	mu     sync.Mutex
	blocks *btree.BTreeG[memBlock]

	// FailGet, if set, is asked before each Get; an error it returns is
	// Get's answer.
	FailGet func(k key.Key) error
	// FailPut, if set, is asked before each Put and PutIf; an error it
	// returns is the answer, and nothing is stored. Like FailGet, it is
	// called from several goroutines at once (a commit's Puts run in
	// parallel).
	FailPut func(k key.Key) error
}

type memBlock struct {
	k    key.Key
	data []byte
}

func lessMem(a, b memBlock) bool { return bytes.Compare(a.k[:], b.k[:]) < 0 }

// NewMemBlocks returns an empty store.
func NewMemBlocks() *MemBlocks {
	return &MemBlocks{blocks: btree.NewG(16, lessMem)}
}

// Put implements Blocks.
func (m *MemBlocks) Put(ctx context.Context, k key.Key, data []byte) error {
	if err := m.failPut(k); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.blocks.ReplaceOrInsert(memBlock{k, bytes.Clone(data)})
	return nil
}

func (m *MemBlocks) failPut(k key.Key) error {
	m.mu.Lock()
	fail := m.FailPut
	m.mu.Unlock()
	if fail != nil {
		return fail(k)
	}
	return nil
}

// PutIf implements Blocks.
func (m *MemBlocks) PutIf(ctx context.Context, k key.Key, prev [32]byte, data []byte) error {
	if err := m.failPut(k); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.blocks.Get(memBlock{k: k})
	switch {
	case !ok && prev != [32]byte{}:
		return fmt.Errorf("%w: %v is absent", ErrConflict, k)
	case ok && sha256.Sum256(old.data) != prev:
		return fmt.Errorf("%w: %v holds other bytes", ErrConflict, k)
	}
	m.blocks.ReplaceOrInsert(memBlock{k, bytes.Clone(data)})
	return nil
}

// Get implements Blocks.
func (m *MemBlocks) Get(ctx context.Context, k key.Key, sum [32]byte) ([]byte, error) {
	m.mu.Lock()
	fail := m.FailGet
	m.mu.Unlock()
	if fail != nil {
		if err := fail(k); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.blocks.Get(memBlock{k: k})
	if !ok {
		return nil, fmt.Errorf("%w: %v", ErrNotFound, k)
	}
	if sha256.Sum256(b.data) != sum {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, k)
	}
	return bytes.Clone(b.data), nil
}

// Delete implements Blocks.
func (m *MemBlocks) Delete(ctx context.Context, k key.Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.blocks.Delete(memBlock{k: k})
	return nil
}

// Latest implements Blocks.
func (m *MemBlocks) Latest(ctx context.Context, lo, hi key.Key) (key.Key, []byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var found *memBlock
	m.blocks.DescendLessOrEqual(memBlock{k: hi}, func(b memBlock) bool {
		if bytes.Compare(b.k[:], lo[:]) >= 0 {
			found = &b
		}
		return false
	})
	if found == nil {
		return key.Key{}, nil, fmt.Errorf("%w in [%v, %v]", ErrNotFound, lo, hi)
	}
	return found.k, bytes.Clone(found.data), nil
}

// Corrupt flips a byte of the block stored under k, as a bad disk or a
// lying replica would; it reports whether k was there.
func (m *MemBlocks) Corrupt(k key.Key) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.blocks.Get(memBlock{k: k})
	if !ok {
		return false
	}
	d := bytes.Clone(b.data)
	if len(d) == 0 {
		d = []byte{1}
	} else {
		d[0] ^= 0xff
	}
	m.blocks.ReplaceOrInsert(memBlock{k, d})
	return true
}

// Keys lists the stored keys in order.
func (m *MemBlocks) Keys() []key.Key {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ks []key.Key
	m.blocks.Ascend(func(b memBlock) bool {
		ks = append(ks, b.k)
		return true
	})
	return ks
}

// Len is the number of stored blocks.
func (m *MemBlocks) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.blocks.Len()
}
