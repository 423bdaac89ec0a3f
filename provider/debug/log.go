package debug

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"slices"
	"sync"

	"senseboard/nvm"
	"senseboard/profile"
)

// The log lives in a region of the EEPROM as a ring of records:
//
//	0      magic 0xD5
//	1      level (0..4)
//	2..3   message length n (little endian)
//	4..7   id (little endian)
//	8..11  timestamp, relative ms (little endian)
//	12..   message bytes
//	12+n   CRC-32 (IEEE) of bytes 0..12+n, little endian
//
// A record that does not fit before the region's end starts again at the
// region's start. At start-up and after any client write into the region the
// region is scanned: a record counts only with its magic, a sane length and
// its checksum, so overwritten or garbled bytes are skipped rather than
// returned, and the next record goes after the one with the largest id.
const (
	recMagic  = 0xD5
	recHeader = 12
	recTrail  = 4
	// MaxLogMessage is the longest message stored; longer ones are clipped.
	MaxLogMessage = 255
)

// Entry is one stored message.
type Entry struct {
	ID        uint32
	Timestamp uint32
	Level     uint8
	Message   string
	pos, size int
}

type logStore struct {
	mem       *nvm.EEPROM
	chip, off int
	size      int

	mu      sync.Mutex
	img     []byte  // the region as this store last read or wrote it
	entries []Entry // by ascending id
	next    uint32
	pos     int
	dirtyLo int // dirty span of img, not yet written
	dirtyHi int

	flush chan struct{}
	done  chan struct{}
	wg    sync.WaitGroup
}

func openLog(mem *nvm.EEPROM, area profile.LogArea) (*logStore, error) {
	l := &logStore{mem: mem, chip: area.Offset / profile.ChipSize, off: area.Offset % profile.ChipSize, size: area.Size,
		dirtyLo: -1, flush: make(chan struct{}, 1), done: make(chan struct{})}
	img, err := mem.Read(l.chip, l.off, l.size)
	if err != nil {
		return nil, err
	}
	l.img = img
	l.scan()
	mem.Watch(l.written)
	l.wg.Add(1)
	go l.flusher()
	return l, nil
}

// scan rebuilds the index from img.
func (l *logStore) scan() {
	l.entries = l.entries[:0]
	b := l.img
	for pos := 0; pos+recHeader+recTrail <= len(b); {
		e, ok := parseRecord(b, pos)
		if !ok {
			pos++
			continue
		}
		l.entries = append(l.entries, e)
		pos += e.size
	}
	slices.SortFunc(l.entries, func(a, b Entry) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	l.entries = slices.CompactFunc(l.entries, func(a, b Entry) bool { return a.ID == b.ID })
	l.next, l.pos = 1, 0
	if n := len(l.entries); n > 0 {
		last := l.entries[n-1]
		l.next = last.ID + 1
		l.pos = last.pos + last.size
	}
}

func parseRecord(b []byte, pos int) (Entry, bool) {
	if b[pos] != recMagic || b[pos+1] > 4 {
		return Entry{}, false
	}
	n := int(binary.LittleEndian.Uint16(b[pos+2:]))
	size := recHeader + n + recTrail
	if n > MaxLogMessage || pos+size > len(b) {
		return Entry{}, false
	}
	if crc32.ChecksumIEEE(b[pos:pos+recHeader+n]) != binary.LittleEndian.Uint32(b[pos+recHeader+n:]) {
		return Entry{}, false
	}
	return Entry{
		ID:        binary.LittleEndian.Uint32(b[pos+4:]),
		Timestamp: binary.LittleEndian.Uint32(b[pos+8:]),
		Level:     b[pos+1],
		Message:   string(b[pos+recHeader : pos+recHeader+n]),
		pos:       pos,
		size:      size,
	}, true
}

// append stores a message and returns its id.
func (l *logStore) append(level uint8, ts uint32, msg string) uint32 {
	if len(msg) > MaxLogMessage {
		msg = msg[:MaxLogMessage]
	}
	size := recHeader + len(msg) + recTrail
	l.mu.Lock()
	defer l.mu.Unlock()
	if size > l.size {
		return 0
	}
	if l.pos+size > l.size {
		l.pos = 0 // wrap: the oldest records are overwritten
	}
	// forget the records the new one overwrites
	lo, hi := l.pos, l.pos+size
	l.entries = slices.DeleteFunc(l.entries, func(e Entry) bool { return e.pos < hi && e.pos+e.size > lo })
	id := l.next
	l.next++
	rec := l.img[lo:hi]
	rec[0], rec[1] = recMagic, level
	binary.LittleEndian.PutUint16(rec[2:], uint16(len(msg)))
	binary.LittleEndian.PutUint32(rec[4:], id)
	binary.LittleEndian.PutUint32(rec[8:], ts)
	copy(rec[recHeader:], msg)
	binary.LittleEndian.PutUint32(rec[recHeader+len(msg):], crc32.ChecksumIEEE(rec[:recHeader+len(msg)]))
	l.entries = append(l.entries, Entry{ID: id, Timestamp: ts, Level: level, Message: msg, pos: lo, size: size})
	l.pos = hi
	l.markDirty(lo, hi)
	select {
	case l.flush <- struct{}{}:
	default:
	}
	return id
}

// flusher writes dirty spans to the EEPROM in the background, so that
// producing a message never waits for a disk. It exits on close.
func (l *logStore) flusher() {
	defer l.wg.Done()
	for {
		select {
		case <-l.flush:
			l.writeDirty()
		case <-l.done:
			l.writeDirty()
			return
		}
	}
}

// writeDirty stores the records not yet written. It copies them from img
// under the EEPROM's write lock, so a client's write into the region is
// either seen in img (written ran) or lands after this one: a flush never
// puts back bytes a client overwrote.
func (l *logStore) writeDirty() {
	l.mu.Lock()
	lo, hi := l.dirtyLo, l.dirtyHi
	l.dirtyLo, l.dirtyHi = -1, 0
	l.mu.Unlock()
	if lo < 0 {
		return
	}
	err := l.mem.WriteFunc(l, l.chip, l.off+lo, hi-lo, func(b []byte) {
		l.mu.Lock()
		copy(b, l.img[lo:hi])
		l.mu.Unlock()
	})
	if err != nil { // the entries stay in memory; the next flush tries again
		l.mu.Lock()
		l.markDirty(lo, hi)
		l.mu.Unlock()
	}
}

// markDirty adds a span of img to what the next flush writes; l.mu is held.
func (l *logStore) markDirty(lo, hi int) {
	if l.dirtyLo < 0 || lo < l.dirtyLo {
		l.dirtyLo = lo
	}
	l.dirtyHi = max(l.dirtyHi, hi)
}

// written is the EEPROM watcher: a write into the region by anyone else
// makes the store take the new bytes and rebuild its index. It runs under
// the EEPROM's write lock, in the order of the writes.
func (l *logStore) written(c nvm.Change) {
	if c.By == l { // img holds these bytes or newer ones
		return
	}
	if c.Chip != l.chip || c.Addr >= l.off+l.size || c.Addr+len(c.Data) <= l.off {
		return
	}
	lo, hi := max(c.Addr, l.off)-l.off, min(c.Addr+len(c.Data), l.off+l.size)-l.off
	now := c.Data[lo+l.off-c.Addr : hi+l.off-c.Addr]
	l.mu.Lock()
	defer l.mu.Unlock()
	if bytes.Equal(now, l.img[lo:hi]) {
		return // the same bytes
	}
	copy(l.img[lo:hi], now)
	l.scan()
}

// query returns up to count entries in descending id order, from id down
// (all ids when id is 0 and useID is false), with timestamps at or below ts
// when useTS is set.
func (l *logStore) query(useID bool, id uint32, useTS bool, ts uint32, count int) []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Entry
	for i := len(l.entries) - 1; i >= 0 && len(out) < count; i-- {
		e := l.entries[i]
		if useID && e.ID > id || useTS && e.Timestamp > ts {
			continue
		}
		out = append(out, e)
	}
	return out
}

func (l *logStore) close() {
	close(l.done)
	l.wg.Wait()
}
