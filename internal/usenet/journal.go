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
	"time"

	"triad/internal/id"
	"triad/internal/vfs"
)

// The journal makes a batch's listing durable in the same group commit as
// its articles: each batch the site hands its spool is appended here, with
// one fdatasync that runs while the spool makes the articles durable (on
// the DHT, while the key's successors sync them); once both are done the
// articles are acknowledged, staged in memory (staged.go) and checkpointed
// to news.db behind the replies. news.db records the last batch it has
// (its "applied" sequence number), and opening the site lists again every
// later batch: an acknowledged article is always listed after a crash.
//
// A record is: length of the payload (4 bytes, big endian; its top bit set
// for the current format), CRC-32C of the payload (4), payload. The
// payload is the batch's sequence number (uvarint) and, for each entry,
// everything the list keeps of it (encodeJournalEntry): replay needs to
// read no article back, which on the DHT could fail or take long while
// nodes are down, and a relaying site's replayed articles reach its out
// log with their heads. A batch too large for one record takes several
// with the same sequence number, written before the one fdatasync.
// Records without the top bit are the first format, each entry only its
// message-id, key, arrival and expiry (decodeJournalV1): replay reads those
// articles back from the spool. Reading stops at the first record that is
// torn or damaged: a batch whose record did not reach the disk was never
// acknowledged.
//
// The journal's directory is synced each time it is opened, so its entry
// is durable before the first batch is acknowledged: an fdatasync of the
// file alone would leave a journal created since the last power cut
// unnamed after the next one.

// maxJournalRecord bounds one record's payload; a batch larger than that
// (heads of up to 64 KB each on a relaying site) is cut into several.
const maxJournalRecord = 4 << 20

// recordV2 marks, in a record's length, the current format.
const recordV2 = 1 << 31

// journalReset is the size past which the journal is emptied once every
// batch in it is listed.
const journalReset = 1 << 20

type journalEntry struct {
	msgid            string
	key              id.ID
	arrived, expires int64
	// entry is the whole entry (the current format); nil for a record of
	// the first, which replay rebuilds from the article.
	entry *Entry
	// stored marks an article this site stored (not a peer's
	// announcement): on the site's own spool, replay checks it is there.
	stored bool
}

type journalBatch struct {
	seq     uint64
	entries []journalEntry
}

type journal struct {
	mu   sync.Mutex
	f    vfs.File
	size int64
	// zeroed is the file's length: batches end at size, zeros follow
	// (preallocate).
	zeroed int64
	last   uint64 // sequence number of the last batch appended
	buf    []byte

	// period, above zero, is periodic durability (SiteConfig.SyncPeriod):
	// append returns once the batch is written, and syncLoop makes it
	// durable within the period.
	period time.Duration
	dirty  bool // written since the last sync
	err    error
	stop   chan struct{}
	done   chan struct{}
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
		n := binary.BigEndian.Uint32(data[off:])
		v2 := n&recordV2 != 0
		n &^= recordV2
		if n == 0 || n > maxJournalRecord || off+8+int(n) > len(data) {
			// n == 0: the zeros past the last batch (preallocate), or damage
			break
		}
		payload := data[off+8 : off+8+int(n)]
		if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(data[off+4:]) {
			break
		}
		decode := decodeJournalV1
		if v2 {
			decode = decodeJournalBatch
		}
		b, err := decode(payload)
		if err != nil {
			break
		}
		batches = append(batches, b)
		off += 8 + int(n)
	}
	if off < len(data) {
		if err := f.Truncate(int64(off)); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("usenet: journal: cutting a torn tail: %w", err)
		}
	}
	j := &journal{f: f, size: int64(off), zeroed: int64(off)}
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

// decodeJournalV1 decodes a record of the first format.
func decodeJournalV1(p []byte) (journalBatch, error) { return decodeRecord(p, decodeEntryV1) }

// decodeRecord decodes a record's payload: its sequence number, then
// entries as decodeEntry reads them.
func decodeRecord(p []byte, decodeEntry func([]byte) (journalEntry, []byte, bool)) (journalBatch, error) {
	var b journalBatch
	var ok bool
	if b.seq, p, ok = uvarint(p); !ok {
		return b, errBadJournal
	}
	for len(p) > 0 {
		var e journalEntry
		if e, p, ok = decodeEntry(p); !ok {
			return b, errBadJournal
		}
		b.entries = append(b.entries, e)
	}
	return b, nil
}

var errBadJournal = errors.New("damaged journal record")

// decodeEntryV1 decodes an entry of the first format: message-id, key,
// arrival and expiry.
func decodeEntryV1(p []byte) (journalEntry, []byte, bool) {
	var e journalEntry
	n, rest, ok := uvarint(p)
	if !ok || n > MaxMessageID || n > uint64(len(rest)) {
		return e, p, false
	}
	e.msgid, p = string(rest[:n]), rest[n:]
	if len(p) < 1 || int(p[0]) > len(p)-1 || int(p[0]) > id.MaxBytes {
		return e, p, false
	}
	var err error
	if e.key, err = id.FromBytes(p[1 : 1+p[0]]); err != nil {
		return e, p, false
	}
	p = p[1+p[0]:]
	if e.arrived, p, ok = varint(p); !ok {
		return e, p, false
	}
	if e.expires, p, ok = varint(p); !ok {
		return e, p, false
	}
	return e, p, true
}

// append writes a batch's records and makes them durable. stored[i]
// marks batch[i] as an article the site stored (not an announced entry).
func (j *journal) append(seq uint64, batch []Entry, stored []bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	var recs []byte
	p := binary.AppendUvarint(j.buf[:0], seq)
	start := len(p)
	cut := func() {
		rec := binary.BigEndian.AppendUint32(nil, uint32(len(p))|recordV2)
		rec = binary.BigEndian.AppendUint32(rec, crc32.Checksum(p, castagnoli))
		recs = append(append(recs, rec...), p...)
		p = binary.AppendUvarint(p[:0], seq)
	}
	for i := range batch {
		mark := len(p)
		p = encodeJournalEntry(p, &batch[i], stored[i])
		if len(p) > maxJournalRecord && mark > start {
			entry := append([]byte(nil), p[mark:]...)
			p = p[:mark]
			cut()
			p = append(p, entry...)
		}
	}
	cut()
	j.buf = p
	if j.err != nil {
		return j.err // a periodic sync failed: nothing more is acknowledged
	}
	if err := j.preallocate(int64(len(recs))); err != nil {
		return err
	}
	if _, err := j.f.WriteAt(recs, j.size); err != nil {
		j.f.Truncate(j.size)
		j.zeroed = j.size
		return fmt.Errorf("usenet: journal: %w", err)
	}
	if j.period > 0 {
		j.dirty = true
	} else if err := j.f.Sync(); err != nil {
		return fmt.Errorf("usenet: journal: fdatasync: %w", err)
	}
	j.size += int64(len(recs))
	j.last = seq
	return nil
}

// preallocate makes sure the file already holds the n bytes past the last
// batch, written as zeros, so that the append's fdatasync writes the
// batch's pages and not the inode (the file's length) as well, as the
// block store's segments do (disk.preallocate). Replay stops at the
// zeros: a record of length 0. Zeros that do not fit (a full file
// system) are cut and the batch appended past the end, as without them.
// j.mu is held.
func (j *journal) preallocate(n int64) error {
	j.zeroed = max(j.zeroed, j.size) // zeros never go over a batch
	for j.size+n > j.zeroed {
		written, err := vfs.WriteZeros(j.f, j.zeroed, vfs.ZeroChunk)
		if err != nil {
			return fmt.Errorf("usenet: journal: preallocating: %w", err)
		}
		if !written {
			return nil
		}
		j.zeroed += vfs.ZeroChunk
	}
	return nil
}

// Flags of an entry in the journal.
const (
	journalStored = 1 << iota
	journalAnnounced
	journalPosted
	journalNumbered // the entry's numbers follow its head
)

// encodeJournalEntry appends e: flags (a byte), message-id, key (width
// byte, bytes), arrival and expiry (varint Unix nanoseconds), bytes and
// lines (uvarint), its groups (a count, then each), subject, from, date,
// references, state and head (each a uvarint length and bytes), and, with
// journalNumbered, its number in each group (uvarint, 0 for none).
func encodeJournalEntry(p []byte, e *Entry, stored bool) []byte {
	var flags byte
	if stored {
		flags |= journalStored
	}
	if e.Announced {
		flags |= journalAnnounced
	}
	if e.Posted {
		flags |= journalPosted
	}
	if len(e.Nums) == len(e.Groups) && len(e.Nums) > 0 {
		flags |= journalNumbered
	}
	p = append(p, flags)
	p = appendString(p, e.MessageID)
	p = e.Key.AppendTo(append(p, byte(e.Key.Width())))
	p = binary.AppendVarint(p, e.Arrived.UnixNano())
	p = binary.AppendVarint(p, e.Expires.UnixNano())
	p = binary.AppendUvarint(p, uint64(e.Bytes))
	p = binary.AppendUvarint(p, uint64(e.Lines))
	p = binary.AppendUvarint(p, uint64(len(e.Groups)))
	for _, g := range e.Groups {
		p = appendString(p, g)
	}
	for _, f := range []string{e.Subject, e.From, e.Date, e.References, e.State} {
		p = appendString(p, f)
	}
	p = binary.AppendUvarint(p, uint64(len(e.Head)))
	p = append(p, e.Head...)
	if flags&journalNumbered != 0 {
		for _, n := range e.Nums {
			p = binary.AppendUvarint(p, n)
		}
	}
	return p
}

func appendString(p []byte, s string) []byte {
	return append(binary.AppendUvarint(p, uint64(len(s))), s...)
}

// maxJournalGroups bounds the groups of one journaled entry.
const maxJournalGroups = 4096

// decodeJournalBatch decodes a record of the current format.
func decodeJournalBatch(p []byte) (journalBatch, error) { return decodeRecord(p, decodeJournalEntry) }

// decodeJournalEntry decodes one entry of encodeJournalEntry's; every
// length is checked against what is left and the list's own bounds.
func decodeJournalEntry(p []byte) (journalEntry, []byte, bool) {
	var je journalEntry
	e := &Entry{}
	if len(p) < 1 {
		return je, p, false
	}
	flags := p[0]
	p = p[1:]
	je.stored, e.Announced, e.Posted = flags&journalStored != 0, flags&journalAnnounced != 0, flags&journalPosted != 0
	var ok bool
	str := func(max int) string {
		n, rest, good := uvarint(p)
		if !good || n > uint64(max) || n > uint64(len(rest)) {
			ok = false
			return ""
		}
		p = rest[n:]
		return string(rest[:n])
	}
	ok = true
	if e.MessageID = str(MaxMessageID); !ok || len(p) < 1 || int(p[0]) > len(p)-1 || int(p[0]) > id.MaxBytes {
		return je, p, false
	}
	key, err := id.FromBytes(p[1 : 1+p[0]])
	if err != nil {
		return je, p, false
	}
	e.Key, p = key, p[1+p[0]:]
	var arrived, expires int64
	var nbytes, lines, groups uint64
	if arrived, p, ok = varint(p); !ok {
		return je, p, false
	}
	if expires, p, ok = varint(p); !ok {
		return je, p, false
	}
	if nbytes, p, ok = uvarint(p); !ok || nbytes > 1<<32-1 {
		return je, p, false
	}
	if lines, p, ok = uvarint(p); !ok || lines > 1<<32-1 {
		return je, p, false
	}
	if groups, p, ok = uvarint(p); !ok || groups > maxJournalGroups || groups > uint64(len(p)) {
		return je, p, false
	}
	for range groups {
		if g := str(maxHead); ok {
			e.Groups = append(e.Groups, g)
		}
	}
	e.Subject, e.From, e.Date, e.References, e.State = str(maxHead), str(maxHead), str(maxHead), str(maxHead), str(maxMidstate)
	head := str(MaxAnnouncement)
	if !ok {
		return je, p, false
	}
	if head != "" {
		e.Head = []byte(head)
	}
	if flags&journalNumbered != 0 {
		e.Nums = make([]uint64, len(e.Groups))
		for i := range e.Nums {
			if e.Nums[i], p, ok = uvarint(p); !ok {
				return je, p, false
			}
		}
	}
	e.Arrived, e.Expires, e.Bytes, e.Lines = time.Unix(0, arrived), time.Unix(0, expires), uint32(nbytes), uint32(lines)
	je.msgid, je.key, je.arrived, je.expires, je.entry = e.MessageID, e.Key, arrived, expires, e
	return je, p, true
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
	j.size, j.zeroed = 0, 0
	return nil
}

// syncPeriodically makes the journal sync what was written every period
// instead of in each append, until close.
func (j *journal) syncPeriodically(period time.Duration) {
	j.period, j.stop, j.done = period, make(chan struct{}), make(chan struct{})
	go func() {
		defer close(j.done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				j.syncDirty()
			case <-j.stop:
				return
			}
		}
	}()
}

// syncDirty syncs the journal if it was written since the last sync. A
// failed sync sticks: a later append fails rather than be acknowledged
// over lost data.
// The sync runs outside the lock, so that appends go on meanwhile (they
// are acknowledged before their sync in this mode anyway).
func (j *journal) syncDirty() {
	j.mu.Lock()
	if !j.dirty || j.err != nil {
		j.mu.Unlock()
		return
	}
	j.dirty = false
	f := j.f
	j.mu.Unlock()
	if err := f.Sync(); err != nil {
		j.mu.Lock()
		j.err = fmt.Errorf("usenet: journal: fdatasync: %w", err)
		j.mu.Unlock()
	}
}

// close stops a periodic sync, syncs what is left, and closes the file.
func (j *journal) close() error {
	if j.stop != nil {
		close(j.stop)
		<-j.done
		j.syncDirty()
	}
	if j.err == nil && j.zeroed > j.size && j.f.Truncate(j.size) == nil {
		j.zeroed = j.size // a clean close leaves no zeros
	}
	return errors.Join(j.err, j.f.Close())
}
