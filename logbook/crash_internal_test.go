package logbook

import (
	"encoding/binary"
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
// power lost after the last fsync) loses nothing it made durable: at the
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
