package logbook

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
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
// removal made durable. An erase of every log saves first an index that
// lists none and says they are being erased, then removes the files. A
// crash between two steps so loses nothing made durable: a log's size is
// its file's, an entry whose file a crash kept from being made, or
// removed, is dropped when the storage opens, an erased log never comes
// back, an erase of every log is finished (the next log numbered 1) or
// never began, and a log's time is never older than its data. A log whose
// end a crash tore is cut back to its last whole chunk when the storage
// opens.
type Storage struct {
	store    *nvm.Store
	dir      string
	capacity int64

	mu      sync.Mutex
	index   index
	sizes   map[uint32]int64
	open    logFile
	openID  uint32
	openLen int64 // the open log's bytes, durable and in whole chunks
	torn    bool  // the open log may hold bytes past openLen: a failed write's

	warnings []string // what OpenStorage repaired

	onCrashPoint func() // a test's, called where a crash may stop the storage
	onSyncDir    func() // a test's, called once the logbook directory is synced
}

// logFile is the log being written: its *os.File, or, in a test, a
// disk that fails.
type logFile interface {
	io.Writer
	Sync() error
	Truncate(size int64) error
	Close() error
}

type index struct {
	NextID  uint32  `json:"nextId"`
	Entries []Entry `json:"entries"` // Size is not kept here: the file has it
	// Erasing says that every log is being erased (Clear): the index
	// already lists none, and the logs' files that remain are removed
	// at the next start if a crash kept Clear from finishing.
	Erasing bool `json:"erasing,omitempty"`
}

const indexFile = "logbook.json"

// OpenStorage opens the logs of a state directory, with room for capacity
// bytes of logs. It lists the logs the index lost (an index deleted) with
// the time each records (recordedTime); an index that is corrupt it sets
// aside, as logbook.json.corrupt, and rebuilds from the logs, with a
// warning (Warnings). An index that cannot be read is an error.
func OpenStorage(store *nvm.Store, capacity int) (*Storage, error) {
	s := newStorage(store, capacity)
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

func newStorage(store *nvm.Store, capacity int) *Storage {
	return &Storage{store: store, dir: filepath.Join(store.Dir(), "logbook"), capacity: int64(capacity), sizes: map[uint32]int64{}}
}

// load reads the index and the logs (OpenStorage), finishes what a crash
// cut short and saves the index.
func (s *Storage) load() error {
	// Nothing is written until the first log: a device that never logs
	// leaves no logbook files behind.
	hadIndex, err := s.store.ReadJSON(indexFile, &s.index)
	var corrupt *nvm.CorruptError
	if errors.As(err, &corrupt) {
		// The index sums up the logs, which can give it again: a device
		// starts with it rebuilt rather than not at all.
		s.index = index{}
		aside, aerr := s.setAside()
		if aerr != nil {
			return fmt.Errorf("logbook: %w; and it cannot be set aside to rebuild it from the logs: %w", err, aerr)
		}
		// Names in the state directory, and the reason last: a device's
		// debug log keeps the first 255 characters of a message.
		s.warnings = append(s.warnings, fmt.Sprintf("logbook: the index of the logs %s was corrupt; it is rebuilt from the logs, and the corrupt file kept as %s (%s)",
			indexFile, filepath.Base(aside), corrupt.Reason))
		hadIndex, err = false, nil
	}
	if err != nil {
		return fmt.Errorf("logbook: %w", err)
	}
	if err := s.finishErase(); err != nil { // that a crash interrupted
		return err
	}
	if s.index.NextID == 0 {
		s.index.NextID = 1
	}
	files, err := os.ReadDir(s.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist): // no log was ever made
	case err != nil:
		return fmt.Errorf("logbook: %w", err)
	default:
		// The index is saved from what the directory shows, once that is
		// durable: a log's removal that a program killed before it synced
		// the directory would otherwise be undone by a power loss after
		// the index forgot the log, which would come back.
		if err := s.syncDir(); err != nil {
			return err
		}
	}
	if !hadIndex && len(files) == 0 {
		return nil
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
		data, err := s.recover(id)
		if err != nil {
			return err
		}
		s.sizes[id] = int64(len(data))
		if !known[id] {
			// A log the index lost (an index deleted, or rebuilt): its
			// time is the one it recorded.
			s.index.Entries = append(s.index.Entries, Entry{ID: id, Modified: recordedTime(data)})
			known[id] = true
		}
		s.index.NextID = max(s.index.NextID, id+1)
	}
	// An entry whose file is gone goes, and so does an id listed twice.
	listed := map[uint32]bool{}
	s.index.Entries = slices.DeleteFunc(s.index.Entries, func(e Entry) bool {
		_, ok := s.sizes[e.ID]
		drop := !ok || listed[e.ID]
		listed[e.ID] = true
		return drop
	})
	slices.SortFunc(s.index.Entries, func(a, b Entry) int { return int(int64(a.ID) - int64(b.ID)) })
	return s.saveIndex()
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
// append may have left it, and returns its bytes.
func (s *Storage) recover(id uint32) ([]byte, error) {
	path := filepath.Join(s.dir, name(id))
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("logbook: %w", err)
	}
	_, n, err := sbem.Chunks(data)
	switch {
	case err == nil:
		return data, nil
	case errors.Is(err, sbem.ErrHeader):
		// Torn before the header was whole: an empty log.
		if err := os.WriteFile(path, []byte(sbem.Header), 0o600); err != nil {
			return nil, fmt.Errorf("logbook: %w", err)
		}
		return []byte(sbem.Header), syncFile(path)
	}
	if err := os.Truncate(path, int64(n)); err != nil {
		return nil, fmt.Errorf("logbook: cut torn log %d: %w", id, err)
	}
	return data[:n], syncFile(path)
}

// recordedTime returns the UTC time in seconds of a log's newest data as
// the log itself records it, for a log the index lost: the UTC time of
// its /Time/Detailed record (written when logging starts, with the
// device time then) moved on by the device time from that record to the
// newest timestamp after it, in whole seconds as the index keeps times:
// the second of the newest data, where the index had that of the write
// after it. It is 0 for a log with no /Time/Detailed record, whose time
// nothing tells.
func recordedTime(data []byte) uint32 {
	recs, _ := sbem.Decode(data) // the records before any that does not decode
	var (
		utc      float64 // µs, of the /Time/Detailed record
		start    uint32  // device time in ms, of the same
		span     int64   // ms from start to the newest timestamp
		anchored bool
	)
	for _, r := range recs {
		var rel, at float64
		isTime := false
		for _, v := range r.Values {
			stream, field, _ := strings.Cut(v.Path, ".")
			switch {
			case stream == timeStream && field == "utcTime":
				at, isTime = v.Value, true
			case stream == timeStream && field == "relativeTime":
				rel = v.Value
			case field == "Timestamp" && anchored:
				// device times wrap at 2³² ms: the difference of two is
				// that of uint32s, and one before the start is not newer
				span = max(span, int64(int32(uint32(v.Value)-start)))
			}
		}
		if isTime && !anchored {
			utc, start, anchored = at, uint32(rel), true
		}
	}
	if !anchored {
		return 0
	}
	secs := math.Floor((utc + float64(span)*1000) / 1e6)
	return uint32(max(0, min(secs, math.MaxUint32)))
}

// setAside renames the corrupt index out of the way, durably, to the
// first name of logbook.json.corrupt, logbook.json.corrupt.2, ... that
// is free, and returns its path: it is kept for its owner to look at.
func (s *Storage) setAside() (string, error) {
	from := s.store.Path(indexFile)
	for i := 1; ; i++ {
		to := from + ".corrupt"
		if i > 1 {
			to += "." + strconv.Itoa(i)
		}
		_, err := os.Lstat(to)
		if err == nil {
			continue
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if err := os.Rename(from, to); err != nil {
			return "", err
		}
		return to, nvm.SyncDir(s.store.Dir())
	}
}

// Warnings returns what was wrong with the storage when it opened and was
// repaired (an index that was corrupt, rebuilt from the logs), one
// sentence each, for the device to warn of.
func (s *Storage) Warnings() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.warnings)
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
	if err := s.finishErase(); err != nil {
		return 0, err
	}
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
	if err := s.finishErase(); err != nil {
		return 0, err
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
	// next start with only the time the log records, if any).
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
// come back at the next start. s.mu is held.
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
// A write is whole or nothing: when it fails (a full disk, an I/O error,
// a failed fsync), what it wrote is cut off again, so the log keeps its
// whole chunks, its size is theirs and nothing of the failed write is
// read; and a log that cannot be cut back takes no more data until it is.
func (s *Storage) write(data []byte, now uint32) error {
	if err := s.cutBack(); err != nil {
		return err
	}
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
	_, err := s.open.Write(data)
	if err == nil {
		err = s.open.Sync()
	}
	if err != nil {
		s.torn = true
		err = fmt.Errorf("logbook: write log %d: %w", s.openID, err)
		if cerr := s.cutBack(); cerr != nil {
			return errors.Join(err, cerr)
		}
		return err
	}
	s.crashPoint()
	s.openLen += int64(len(data))
	s.sizes[s.openID] = s.openLen
	return nil
}

// cutBack cuts the open log back to its size, durably, if a failed write
// may have left bytes after it; s.mu is held.
func (s *Storage) cutBack() error {
	if !s.torn {
		return nil
	}
	err := s.open.Truncate(s.openLen)
	if err == nil {
		err = s.open.Sync()
	}
	if err != nil {
		return fmt.Errorf("logbook: cut log %d back to its %d bytes after a failed write: %w", s.openID, s.openLen, err)
	}
	s.torn = false
	return nil
}

// CloseLog closes the open log, if any.
func (s *Storage) CloseLog() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil {
		return nil
	}
	err := s.cutBack()
	if cerr := s.open.Close(); err == nil {
		err = cerr
	}
	s.open, s.torn = nil, false
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

// Clear erases every log; the next log is number 1 again. A crash at
// any moment of it leaves every log as it was, or, at the next start,
// none and the next log numbered 1: the index first says that the
// logbook is empty and being erased, and then the files go; the next
// start finishes an erase that a crash interrupted. An erase that fails
// part way is finished before the next log is made.
func (s *Storage) Clear() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open != nil {
		return errors.New("logbook: a log is open")
	}
	// An empty logbook numbers its logs from 1 again, as the family's
	// logbook does after an erase: clients enumerate logs from id 1.
	erasing := index{NextID: 1, Erasing: true}
	if err := s.store.WriteJSON(indexFile, &erasing); err != nil {
		return err
	}
	s.index = erasing
	clear(s.sizes)
	s.crashPoint()
	return s.finishErase()
}

// finishErase, when the index says every log is being erased (Clear),
// removes the files of the logs that remain, durably, and then saves the
// index of an empty logbook. s.mu is held, or s is being opened.
func (s *Storage) finishErase() error {
	if !s.index.Erasing {
		return nil
	}
	files, err := os.ReadDir(s.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist): // no log was ever made
	case err != nil:
		return fmt.Errorf("logbook: %w", err)
	default:
		for _, f := range files {
			if _, ok := parseName(f.Name()); !ok {
				continue
			}
			err := os.Remove(filepath.Join(s.dir, f.Name()))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("logbook: %w", err)
			}
			s.crashPoint()
		}
		// The directory is synced even when no file was left to remove:
		// the erase that was cut short (a failed removal, or the program
		// killed) may have removed them all, and its removals are durable
		// only once the directory is synced.
		if err := s.syncDir(); err != nil {
			return err
		}
		s.crashPoint()
	}
	s.index = index{NextID: 1}
	return s.saveIndex()
}
