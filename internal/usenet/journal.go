package usenet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"

	"triad/internal/id"
	"triad/internal/vfs"
)

// The journal lets a site acknowledge fed articles before their overview
// and history are committed. Each batch of articles written to the spool
// is appended here, with one fdatasync that runs while the spool's group
// commit makes the articles durable; once both are done the articles are
// acknowledged, and the overview is committed afterwards, off the path of
// the reply. news.db records the last batch it has listed ("applied"), and
// opening the site lists again every later batch whose articles the spool
// has: an acknowledged article is always listed after a crash, and an
// article the spool lost (never acknowledged) is not.
//
// A record is: length of the payload (4 bytes, big endian), CRC-32C of the
// payload (4), payload. The payload is the batch's sequence number
// (uvarint) and, for each article, its message-id (uvarint length, bytes),
// spool key (width byte, bytes), arrival and expiry (varint Unix
// nanoseconds). Reading stops at the first record that is torn or damaged:
// a batch whose record did not reach the disk was never acknowledged.
//
// The journal's directory is synced each time it is opened, so its entry
// is durable before the first batch is acknowledged: an fdatasync of the
// file alone would leave a journal created since the last power cut
// unnamed after the next one.

// maxJournalRecord bounds one record: a batch of 1,024 articles with the
// longest message-ids is under 300 KB.
const maxJournalRecord = 4 << 20

// journalReset is the size past which the journal is emptied once every
// batch in it is listed.
const journalReset = 1 << 20

type journalEntry struct {
	msgid            string
	key              id.ID
	arrived, expires int64
}

type journalBatch struct {
	seq     uint64
	entries []journalEntry
}

type journal struct {
	mu   sync.Mutex
	f    vfs.File
	size int64
	last uint64 // sequence number of the last batch appended
	buf  []byte
}

// openJournal opens (or creates) the journal on fsys and returns its
// intact batches. A damaged tail is cut off.
func openJournal(fsys vfs.FS, path string) (*journal, []journalBatch, error) {
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("usenet: journal: %w", err)
	}
	// Created now or by a process that died before syncing its directory:
	// either way the entry may not be durable yet.
	if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("usenet: journal: syncing its directory: %w", err)
	}
	data, err := readJournal(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("usenet: journal: %w", err)
	}
	var batches []journalBatch
	off := 0
	for off+8 <= len(data) {
		n := int(binary.BigEndian.Uint32(data[off:]))
		if n > maxJournalRecord || off+8+n > len(data) {
			break
		}
		payload := data[off+8 : off+8+n]
		if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(data[off+4:]) {
			break
		}
		b, err := decodeJournalBatch(payload)
		if err != nil {
			break
		}
		batches = append(batches, b)
		off += 8 + n
	}
	if off < len(data) {
		if err := f.Truncate(int64(off)); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("usenet: journal: cutting a torn tail: %w", err)
		}
	}
	j := &journal{f: f, size: int64(off)}
	if len(batches) > 0 {
		j.last = batches[len(batches)-1].seq
	}
	return j, batches, nil
}

// readJournal reads the whole journal, up to 1 GiB.
func readJournal(f vfs.File) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data := make([]byte, min(st.Size(), 1<<30))
	n, err := f.ReadAt(data, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return data[:n], nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func decodeJournalBatch(p []byte) (journalBatch, error) {
	bad := errors.New("damaged journal record")
	var b journalBatch
	var ok bool
	if b.seq, p, ok = uvarint(p); !ok {
		return b, bad
	}
	for len(p) > 0 {
		var e journalEntry
		n, rest, ok := uvarint(p)
		if !ok || n > MaxMessageID || n > uint64(len(rest)) {
			return b, bad
		}
		e.msgid, p = string(rest[:n]), rest[n:]
		if len(p) < 1 || int(p[0]) > len(p)-1 || int(p[0]) > id.MaxBytes {
			return b, bad
		}
		var err error
		if e.key, err = id.FromBytes(p[1 : 1+p[0]]); err != nil {
			return b, bad
		}
		p = p[1+p[0]:]
		if e.arrived, p, ok = varint(p); !ok {
			return b, bad
		}
		if e.expires, p, ok = varint(p); !ok {
			return b, bad
		}
		b.entries = append(b.entries, e)
	}
	return b, nil
}

// append writes a batch's record and makes it durable.
func (j *journal) append(seq uint64, batch []Entry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	p := binary.AppendUvarint(j.buf[:0], seq)
	for _, e := range batch {
		p = binary.AppendUvarint(p, uint64(len(e.MessageID)))
		p = append(p, e.MessageID...)
		p = e.Key.AppendTo(append(p, byte(e.Key.Width())))
		p = binary.AppendVarint(p, e.Arrived.UnixNano())
		p = binary.AppendVarint(p, e.Expires.UnixNano())
	}
	rec := make([]byte, 8, 8+len(p))
	binary.BigEndian.PutUint32(rec, uint32(len(p)))
	binary.BigEndian.PutUint32(rec[4:], crc32.Checksum(p, castagnoli))
	rec = append(rec, p...)
	j.buf = p
	if _, err := j.f.WriteAt(rec, j.size); err != nil {
		j.f.Truncate(j.size)
		return fmt.Errorf("usenet: journal: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("usenet: journal: fdatasync: %w", err)
	}
	j.size += int64(len(rec))
	j.last = seq
	return nil
}

// listed notes that every batch up to seq is in news.db, and empties the
// journal when that is all of it and it has grown large.
func (j *journal) listed(seq uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if seq < j.last || j.size < journalReset {
		return nil
	}
	return j.reset()
}

// reset empties the journal. j.mu is held, or the journal not yet shared.
func (j *journal) reset() error {
	if err := j.f.Truncate(0); err != nil {
		return fmt.Errorf("usenet: journal: %w", err)
	}
	j.size = 0
	return nil
}

func (j *journal) close() error { return j.f.Close() }
