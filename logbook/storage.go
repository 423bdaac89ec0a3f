package logbook

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"senseboard/nvm"
	"senseboard/sbem"
)

// ErrFull is returned when a log cannot grow: it alone fills the storage.
var ErrFull = errors.New("the log storage is full")

// ErrNoLog is returned for a log id the storage does not hold.
var ErrNoLog = errors.New("no log with this id")

// Entry describes one log.
type Entry struct {
	ID       uint32 `json:"Id"`
	Modified uint32 `json:"ModificationTimestamp"` // seconds since 1970 UTC
	Size     uint64 `json:"Size"`
}

// Storage holds the logs in the state directory: one SBEM file per log in
// the logbook directory, appended to and fsynced, and an index (ids,
// modification times, the next id) in an atomically replaced state file,
// saved before the file it describes changes: a new log's entry before its
// file, a log's new modification time before the data it dates (once a
// second while logging); and after an erased log's file is removed, its
// removal made durable. A crash between two steps so loses nothing made
// durable: a log's size is its file's, an entry whose file a crash kept
// from being made, or removed, is dropped when the storage opens, an
// erased log never comes back, and a log's time is never older than its
// data. A log whose end a crash tore is cut back to
// its last whole chunk when the storage opens.
type Storage struct {
	store    *nvm.Store
	dir      string
	capacity int64

	mu      sync.Mutex
	index   index
	sizes   map[uint32]int64
	open    *os.File
	openID  uint32
	openLen int64

	onCrashPoint func() // a test's, called where a crash may stop the storage
	onSyncDir    func() // a test's, called once the logbook directory is synced
}

type index struct {
	NextID  uint32  `json:"nextId"`
	Entries []Entry `json:"entries"` // Size is not kept here: the file has it
}

const indexFile = "logbook.json"

// OpenStorage opens the logs of a state directory, with room for capacity
// bytes of logs.
func OpenStorage(store *nvm.Store, capacity int) (*Storage, error) {
	s := &Storage{store: store, dir: filepath.Join(store.Dir(), "logbook"), capacity: int64(capacity), sizes: map[uint32]int64{}}
	// Nothing is written until the first log: a device that never logs
	// leaves no logbook files behind.
	hadIndex, err := store.ReadJSON(indexFile, &s.index)
	if err != nil {
		return nil, fmt.Errorf("logbook: %w", err)
	}
	if s.index.NextID == 0 {
		s.index.NextID = 1
	}
	files, err := os.ReadDir(s.dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("logbook: %w", err)
	}
	if !hadIndex && len(files) == 0 {
		return s, nil
	}
	known := map[uint32]bool{}
	for _, e := range s.index.Entries {
		known[e.ID] = true
	}
	for _, f := range files {
		id, ok := parseName(f.Name())
		if !ok {
			continue
		}
		size, err := s.recover(id)
		if err != nil {
			return nil, err
		}
		s.sizes[id] = size
		if !known[id] {
			s.index.Entries = append(s.index.Entries, Entry{ID: id})
			known[id] = true
		}
		s.index.NextID = max(s.index.NextID, id+1)
	}
	s.index.Entries = slices.DeleteFunc(s.index.Entries, func(e Entry) bool { _, ok := s.sizes[e.ID]; return !ok })
	slices.SortFunc(s.index.Entries, func(a, b Entry) int { return int(int64(a.ID) - int64(b.ID)) })
	return s, s.saveIndex()
}

func name(id uint32) string { return fmt.Sprintf("%08d.sbem", id) }

func parseName(n string) (uint32, bool) {
	s, ok := strings.CutSuffix(n, ".sbem")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 32)
	return uint32(v), err == nil && v > 0
}

// recover cuts a log back to its last whole chunk, as a crash during an
// append may have left it, and returns its size.
func (s *Storage) recover(id uint32) (int64, error) {
	path := filepath.Join(s.dir, name(id))
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("logbook: %w", err)
	}
	_, n, err := sbem.Chunks(data)
	switch {
	case err == nil:
		return int64(len(data)), nil
	case errors.Is(err, sbem.ErrHeader):
		// Torn before the header was whole: an empty log.
		n = 0
		if err := os.WriteFile(path, []byte(sbem.Header), 0o600); err != nil {
			return 0, fmt.Errorf("logbook: %w", err)
		}
		return int64(len(sbem.Header)), syncFile(path)
	}
	if err := os.Truncate(path, int64(n)); err != nil {
		return 0, fmt.Errorf("logbook: cut torn log %d: %w", id, err)
	}
	return int64(n), syncFile(path)
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("logbook: %w", err)
	}
	defer f.Close()
	return f.Sync()
}

func (s *Storage) saveIndex() error {
	return s.store.WriteJSON(indexFile, &s.index)
}

// NewID reserves a new log id, as POST /Mem/Logbook/Entries does.
func (s *Storage) NewID() (uint32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.index.NextID
	s.index.NextID++
	return id, s.saveIndex()
}

// Create opens a new log for appending, with the SBEM header written, and
// returns its id.
func (s *Storage) Create(now uint32) (uint32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open != nil {
		return 0, errors.New("logbook: a log is already open")
	}
	if err := s.makeRoom(int64(len(sbem.Header))); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return 0, fmt.Errorf("logbook: %w", err)
	}
	// The index names the log, with its time, before its file exists: a
	// crash between the two leaves an entry with no file, which the next
	// start drops, never a file the index does not know (listed at the
	// next start with no modification time).
	id := s.index.NextID
	s.index.NextID++
	s.index.Entries = append(s.index.Entries, Entry{ID: id, Modified: now})
	if err := s.saveIndex(); err != nil {
		s.index.Entries = s.index.Entries[:len(s.index.Entries)-1]
		return 0, err
	}
	s.crashPoint()
	f, err := s.createLog(id)
	if err != nil {
		s.index.Entries = slices.DeleteFunc(s.index.Entries, func(e Entry) bool { return e.ID == id })
		if serr := s.saveIndex(); serr != nil {
			err = errors.Join(err, serr)
		}
		return 0, err
	}
	s.crashPoint()
	s.open, s.openID, s.openLen = f, id, int64(len(sbem.Header))
	s.sizes[id] = s.openLen
	return id, nil
}

// createLog creates the file of log id with the SBEM header, durable
// with its directory entry, open for appending.
func (s *Storage) createLog(id uint32) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(s.dir, name(id)), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("logbook: %w", err)
	}
	if _, err := f.Write([]byte(sbem.Header)); err != nil {
		f.Close()
		return nil, fmt.Errorf("logbook: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("logbook: %w", err)
	}
	if err := s.syncDir(); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// removeLog removes the file of log id, durably, before the index
// forgets it: a crash between the two leaves an entry with no file, which
// the next start drops, never a file the index does not know, which would
// come back at the next start with no modification time. s.mu is held.
func (s *Storage) removeLog(id uint32) error {
	err := os.Remove(filepath.Join(s.dir, name(id)))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // nothing to make durable
	case err != nil:
		return fmt.Errorf("logbook: %w", err)
	}
	if err := s.syncDir(); err != nil {
		return err
	}
	s.crashPoint()
	return nil
}

// syncDir makes the creations and removals of log files in the logbook
// directory durable.
func (s *Storage) syncDir() error {
	if err := nvm.SyncDir(s.dir); err != nil {
		return fmt.Errorf("logbook: %w", err)
	}
	if s.onSyncDir != nil {
		s.onSyncDir()
	}
	return nil
}

// crashPoint marks a moment between two durable steps, where a crash
// may stop the storage (a test's seam; nothing in production).
func (s *Storage) crashPoint() {
	if s.onCrashPoint != nil {
		s.onCrashPoint()
	}
}

// makeRoom erases the oldest closed logs until n more bytes fit; s.mu is held.
func (s *Storage) makeRoom(n int64) error {
	for s.used()+n > s.capacity {
		i := slices.IndexFunc(s.index.Entries, func(e Entry) bool { return s.open == nil || e.ID != s.openID })
		if i < 0 {
			return ErrFull
		}
		id := s.index.Entries[i].ID
		if err := s.removeLog(id); err != nil {
			return err
		}
		delete(s.sizes, id)
		s.index.Entries = slices.Delete(s.index.Entries, i, i+1)
		if err := s.saveIndex(); err != nil {
			return err
		}
	}
	return nil
}

func (s *Storage) used() int64 {
	var t int64
	for _, v := range s.sizes {
		t += v
	}
	return t
}

// Append adds chunks to the open log and makes them durable. It erases the
// oldest logs when needed, and fails with ErrFull when the open log alone
// would overflow the storage, after writing the whole chunks that fit.
func (s *Storage) Append(data []byte, now uint32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil {
		return errors.New("logbook: no log is open")
	}
	if len(data) == 0 {
		return nil
	}
	err := s.makeRoom(int64(len(data)))
	if errors.Is(err, ErrFull) {
		// The other logs are erased: keep what fits, in whole chunks.
		if n := fitChunks(data, s.capacity-s.used()); n > 0 {
			if werr := s.write(data[:n], now); werr != nil {
				return werr
			}
		}
		return err
	}
	if err != nil {
		return err
	}
	return s.write(data, now)
}

// fitChunks returns how many bytes of whole chunks at the start of data
// fit in room bytes.
func fitChunks(data []byte, room int64) int {
	chunks, _, _ := sbem.Chunks(append([]byte(sbem.Header), data...))
	n := 0
	for _, c := range chunks {
		size := len(sbem.AppendChunk(nil, c.ID, c.Data))
		if int64(n+size) > room {
			break
		}
		n += size
	}
	return n
}

// write appends data to the open log and makes it durable; s.mu is held.
func (s *Storage) write(data []byte, now uint32) error {
	for i := range s.index.Entries {
		if e := &s.index.Entries[i]; e.ID == s.openID && e.Modified != now {
			// The index keeps the time before the data it dates is
			// written (once a second at most): across a crash a log's
			// time is never older than the data it holds, and never goes
			// back from what Entries showed.
			was := e.Modified
			e.Modified = now
			if err := s.saveIndex(); err != nil {
				e.Modified = was
				return err
			}
			s.crashPoint()
		}
	}
	if _, err := s.open.Write(data); err != nil {
		return fmt.Errorf("logbook: %w", err)
	}
	if err := s.open.Sync(); err != nil {
		return fmt.Errorf("logbook: %w", err)
	}
	s.crashPoint()
	s.openLen += int64(len(data))
	s.sizes[s.openID] = s.openLen
	return nil
}

// CloseLog closes the open log, if any.
func (s *Storage) CloseLog() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil {
		return nil
	}
	err := s.open.Close()
	s.open = nil
	if serr := s.saveIndex(); err == nil {
		err = serr
	}
	return err
}

// IsOpen reports whether a log is open.
func (s *Storage) IsOpen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open != nil
}

// Entries lists the logs, oldest first.
func (s *Storage) Entries() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.index.Entries)
	for i := range out {
		out[i].Size = uint64(s.sizes[out[i].ID])
	}
	return out
}

// Read returns a log's bytes. Of the log being written it returns what
// was written and made durable when Read began, whole chunks only: an
// append that is under way as the file is read is left out.
func (s *Storage) Read(id uint32) ([]byte, error) {
	s.mu.Lock()
	size, ok := s.sizes[id]
	s.mu.Unlock()
	if !ok {
		return nil, ErrNoLog
	}
	data, err := os.ReadFile(filepath.Join(s.dir, name(id)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoLog
	}
	if int64(len(data)) > size {
		data = data[:size]
	}
	return data, err
}

// ErrOpenLog is returned for the removal of the log being written.
var ErrOpenLog = errors.New("the log is being written")

// Remove erases one log.
func (s *Storage) Remove(id uint32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sizes[id]; !ok {
		return ErrNoLog
	}
	if s.open != nil && s.openID == id {
		return ErrOpenLog
	}
	if err := s.removeLog(id); err != nil {
		return err
	}
	delete(s.sizes, id)
	s.index.Entries = slices.DeleteFunc(s.index.Entries, func(e Entry) bool { return e.ID == id })
	return s.saveIndex()
}

// Clear erases every log; the next log is number 1 again.
func (s *Storage) Clear() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open != nil {
		return errors.New("logbook: a log is open")
	}
	removed := false
	for id := range s.sizes {
		err := os.Remove(filepath.Join(s.dir, name(id)))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("logbook: %w", err)
		}
		removed = removed || err == nil
		delete(s.sizes, id)
	}
	if removed { // durably, before the index forgets them (removeLog)
		if err := s.syncDir(); err != nil {
			return err
		}
		s.crashPoint()
	}
	// An empty logbook numbers its logs from 1 again, as the family's
	// logbook does after an erase: clients enumerate logs from id 1.
	s.index.Entries = nil
	s.index.NextID = 1
	return s.saveIndex()
}
