package logbook

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"senseboard/nvm"
	"senseboard/sbem"
)

// timeChunk is a data chunk that carries the time of the append that
// wrote it, so that a log read after a crash tells how recent its newest
// durable data is.
func timeChunk(now uint32) []byte {
	return sbem.AppendChunk(nil, 1, binary.LittleEndian.AppendUint32(nil, now))
}

// copyDir copies the regular files of a directory tree, as a crash leaves
// them: every step the storage made durable is in them.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o700)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// openIn opens the log storage of the state directory dir, with room for
// a MiB of logs; its store is closed when the test ends.
func openIn(t *testing.T, dir string) *Storage {
	t.Helper()
	store, err := nvm.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	s, err := OpenStorage(store, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// emptyLogs makes n logs, with no data, numbered and timed from 1.
func emptyLogs(t *testing.T, s *Storage, n uint32) {
	t.Helper()
	for now := range n {
		if _, err := s.Create(now + 1); err != nil {
			t.Fatal(err)
		}
		if err := s.CloseLog(); err != nil {
			t.Fatal(err)
		}
	}
}

// A crash at any moment between the storage's durable steps (kill -9, or
// power lost after the last fsync), as logs are made, written, erased one
// by one or all at once, loses nothing it made durable: at the
// next start every log whose file exists is listed, with the size of its
// whole chunks, and with a modification time no older than the newest data
// it holds nor than its creation; the next log gets a new id.
func TestCrashLosesNothingDurable(t *testing.T) {
	s := openIn(t, t.TempDir())
	store := s.store
	var crashes []string // the state directories as each crash point left them
	s.onCrashPoint = func() {
		dir := t.TempDir()
		copyDir(t, store.Dir(), dir)
		crashes = append(crashes, dir)
	}
	const created = 1_763_900_000 // the time each log is created, and its first data
	steps := []func() error{
		func() error { _, err := s.Create(created); return err },
		func() error { return s.Append(timeChunk(created), created) },
		func() error { return s.Append(timeChunk(created+1), created+1) },
		func() error { return s.Append(timeChunk(created+1), created+1) },
		func() error { return s.Append(timeChunk(created+2), created+2) },
		s.CloseLog,
		func() error { _, err := s.Create(created + 3); return err },
		func() error { return s.Append(timeChunk(created+4), created+4) },
		s.CloseLog,
		func() error { return s.Remove(1) },
		s.Clear,
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	s.CloseLog()
	if len(crashes) < len(steps) {
		t.Fatalf("%d crash points in %d steps; the seam is not reached", len(crashes), len(steps))
	}
	for k, dir := range crashes {
		st, err := nvm.Open(dir)
		if err != nil {
			t.Fatalf("crash %d: %v", k, err)
		}
		after, err := OpenStorage(st, 1<<20)
		if err != nil {
			st.Close()
			t.Fatalf("crash %d: %v", k, err)
		}
		listed := map[uint32]Entry{}
		for _, e := range after.Entries() {
			listed[e.ID] = e
		}
		files, _ := os.ReadDir(filepath.Join(dir, "logbook"))
		var maxID uint32
		for _, f := range files {
			id, ok := parseName(f.Name())
			if !ok {
				continue
			}
			maxID = max(maxID, id)
			data, err := os.ReadFile(filepath.Join(dir, "logbook", f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			chunks, _, _ := sbem.Chunks(data)
			var newest uint32
			for _, c := range chunks {
				newest = max(newest, binary.LittleEndian.Uint32(c.Data))
			}
			e, ok := listed[id]
			switch {
			case !ok:
				t.Errorf("crash %d: log %d has a file and is not listed", k, id)
			case e.Size != uint64(len(data)):
				t.Errorf("crash %d: log %d listed with %d bytes, its file holds %d", k, id, e.Size, len(data))
			case e.Modified < created || e.Modified < newest:
				t.Errorf("crash %d: log %d modified at %d; it was created at %d or later and holds data of %d", k, id, e.Modified, created, newest)
			}
		}
		if id, err := after.NewID(); err != nil || id <= maxID {
			t.Errorf("crash %d: new id %d (%v) after logs up to %d", k, id, err, maxID)
		}
		st.Close()
	}
}

// A log's file is removed durably (its directory synced) before the index
// forgets it, for each way a log goes: erased alone, erased as the oldest
// to make room, erased with every log (where the index says first that
// every log is being erased, which the next start finishes). A power loss
// after an index that no longer lists a log, with its file's removal not
// yet durable, would bring the log back at the next start.
func TestRemovalDurableBeforeIndexForgets(t *testing.T) {
	const logSize = 100 // bytes of data in each log
	for _, tt := range []struct {
		name   string
		remove func(s *Storage) error
		gone   []uint32 // the logs it removes
	}{
		{"one", func(s *Storage) error { return s.Remove(1) }, []uint32{1}},
		{"oldest, for room", func(s *Storage) error {
			if _, err := s.Create(3); err != nil {
				return err
			}
			return s.Append(sbem.AppendChunk(nil, 1, make([]byte, logSize)), 3)
		}, []uint32{1}},
		{"all", func(s *Storage) error { return s.Clear() }, []uint32{1, 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store, err := nvm.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			// room for two logs, not three
			s, err := OpenStorage(store, 2*(len(sbem.Header)+logSize+2)+logSize/2)
			if err != nil {
				t.Fatal(err)
			}
			for now := range uint32(2) {
				if _, err := s.Create(now + 1); err != nil {
					t.Fatal(err)
				}
				if err := s.Append(sbem.AppendChunk(nil, 1, make([]byte, logSize)), now+1); err != nil {
					t.Fatal(err)
				}
				if err := s.CloseLog(); err != nil {
					t.Fatal(err)
				}
			}
			durable := map[uint32]bool{} // logs whose removal a sync made durable while the index listed them, or said they were being erased
			s.onSyncDir = func() {
				var idx index
				if _, err := store.ReadJSON(indexFile, &idx); err != nil {
					t.Fatal(err)
				}
				ids := tt.gone
				if !idx.Erasing {
					ids = nil
					for _, e := range idx.Entries {
						ids = append(ids, e.ID)
					}
				}
				for _, id := range ids {
					if _, err := os.Stat(filepath.Join(s.dir, name(id))); errors.Is(err, fs.ErrNotExist) {
						durable[id] = true
					}
				}
			}
			if err := tt.remove(s); err != nil {
				t.Fatal(err)
			}
			for _, id := range tt.gone {
				if _, err := os.Stat(filepath.Join(s.dir, name(id))); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("log %d: its file is still there (%v)", id, err)
				}
				if !durable[id] {
					t.Errorf("log %d: the index forgot it before its file's removal was made durable", id)
				}
			}
		})
	}
}

// A crash at any moment of an erase of every log (DELETE
// /Mem/Logbook/Entries) leaves, at the next start, the logbook as it was
// before the erase, or as a finished erase leaves it: no logs, and the
// next log numbered 1. Never some logs gone and the numbering going on.
func TestCrashDuringEraseIsAllOrNothing(t *testing.T) {
	s := openIn(t, t.TempDir())
	store := s.store
	for now := range uint32(3) {
		if _, err := s.Create(now + 1); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(timeChunk(now+1), now+1); err != nil {
			t.Fatal(err)
		}
		if err := s.CloseLog(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Remove(2); err != nil { // the next id is not one past the last log's
		t.Fatal(err)
	}
	before := s.Entries()
	if _, err := s.NewID(); err != nil { // reserved: the next log would be 5
		t.Fatal(err)
	}
	crashes := []string{t.TempDir()} // the state directories at each crash point, from before the erase
	copyDir(t, store.Dir(), crashes[0])
	s.onCrashPoint = func() {
		dir := t.TempDir()
		copyDir(t, store.Dir(), dir)
		crashes = append(crashes, dir)
	}
	if err := s.Clear(); err != nil {
		t.Fatal(err)
	}
	if len(crashes) < 2+len(before) {
		t.Fatalf("%d crash points in an erase of %d logs; the seam is not reached", len(crashes)-1, len(before))
	}
	var erased, kept int
	for k, dir := range crashes {
		after := openIn(t, dir)
		got := after.Entries()
		id, err := after.Create(9)
		switch {
		case err != nil:
			t.Errorf("crash %d: a new log: %v", k, err)
		case len(got) == 0 && id == 1:
			erased++
		case slices.Equal(got, before) && id == 5:
			kept++
		default:
			t.Errorf("crash %d: logs %+v and a new log numbered %d; want the %+v of before the erase and 5, or none and 1", k, got, id, before)
		}
		after.CloseLog()
	}
	if erased == 0 || kept == 0 {
		t.Errorf("%d crashes left the logs as they were, %d as erased; the crash points do not span the erase", kept, erased)
	}
}

// An erase of every log that was cut short after it removed every file
// (a removal that failed after them, or the program killed before it
// synced the directory) is finished with the directory synced before the
// index stops saying that the logs are being erased: the removals of the
// erase that was cut short are durable only then, and a power loss after
// an index of an empty logbook would bring the logs back.
func TestEraseFinishedDurablyAfterItWasCutShort(t *testing.T) {
	dir := t.TempDir()
	s := openIn(t, dir)
	emptyLogs(t, s, 2)
	// a directory, not empty, where log 2's file was: the erase removes
	// log 1's file, then fails
	stuck := filepath.Join(s.dir, name(2))
	if err := os.Remove(stuck); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(stuck, "in the way"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.Clear(); err == nil {
		t.Fatal("an erase that could not remove a file reported nothing")
	}
	if _, err := os.Stat(filepath.Join(s.dir, name(1))); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("log 1's file after the failed erase: %v; want it removed", err)
	}
	if err := os.RemoveAll(stuck); err != nil { // its owner clears the way
		t.Fatal(err)
	}
	synced := false // the directory synced while the index said the logs were being erased
	s.onSyncDir = func() {
		var idx index
		if _, err := s.store.ReadJSON(indexFile, &idx); err != nil {
			t.Fatal(err)
		}
		synced = synced || idx.Erasing
	}
	if id, err := s.NewID(); err != nil || id != 1 {
		t.Fatalf("the next id: %d, %v; want 1", id, err)
	}
	if !synced {
		t.Error("the erase was finished with no sync of the directory while the index said the logs were being erased")
	}
}

// A log's removal that the program was killed before making durable (its
// file removed, the directory not yet synced) is made durable when the
// storage opens, before the index that forgets the log is saved: a power
// loss after that index would bring the log back.
func TestOpenMakesARemovalDurableBeforeTheIndexForgets(t *testing.T) {
	dir := t.TempDir()
	s := openIn(t, dir)
	emptyLogs(t, s, 2)
	// Remove(1), killed between the removal of the file and the sync of
	// its directory
	if err := os.Remove(filepath.Join(s.dir, name(1))); err != nil {
		t.Fatal(err)
	}
	s.store.Close()
	store, err := nvm.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s = newStorage(store, 1<<20)
	synced := false // the directory synced while the index listed log 1
	s.onSyncDir = func() {
		var idx index
		if _, err := store.ReadJSON(indexFile, &idx); err != nil {
			t.Fatal(err)
		}
		synced = synced || slices.ContainsFunc(idx.Entries, func(e Entry) bool { return e.ID == 1 })
	}
	if err := s.load(); err != nil {
		t.Fatal(err)
	}
	if es := s.Entries(); len(es) != 1 || es[0].ID != 2 {
		t.Errorf("entries %+v; want log 2 alone", es)
	}
	if !synced {
		t.Error("the index forgot log 1 with no sync of the directory that made its removal durable")
	}
}
