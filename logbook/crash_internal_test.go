package logbook

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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

// A crash at any moment between the storage's durable steps (kill -9, or
// power lost after the last fsync), as logs are made, written, erased one
// by one or all at once, loses nothing it made durable: at the
// next start every log whose file exists is listed, with the size of its
// whole chunks, and with a modification time no older than the newest data
// it holds nor than its creation; the next log gets a new id.
func TestCrashLosesNothingDurable(t *testing.T) {
	store, err := nvm.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s, err := OpenStorage(store, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
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
// to make room, erased with every log. A power loss after an index that no
// longer lists a log, with its file's removal not yet durable, would bring
// the log back at the next start, with no modification time.
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
			durable := map[uint32]bool{} // logs whose removal a sync made durable while the index listed them
			s.onSyncDir = func() {
				var idx index
				if _, err := store.ReadJSON(indexFile, &idx); err != nil {
					t.Fatal(err)
				}
				for _, e := range idx.Entries {
					if _, err := os.Stat(filepath.Join(s.dir, name(e.ID))); errors.Is(err, fs.ErrNotExist) {
						durable[e.ID] = true
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
