package logbook_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"senseboard/logbook"
	"senseboard/nvm"
	"senseboard/sbem"
)

// openStorage opens the log storage of the state directory dir, and
// returns it with the state directory's store, to close.
func openStorage(t *testing.T, dir string, capacity int) (*logbook.Storage, *nvm.Store) {
	t.Helper()
	store, err := nvm.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	s, err := logbook.OpenStorage(store, capacity)
	if err != nil {
		t.Fatal(err)
	}
	return s, store
}

// The storage writes nothing until the first log. Opened with an index
// that lost logs, it finds them again in id order, ignores files that are
// no logs, and gives new logs ids after them.
func TestStorageFindsLogs(t *testing.T) {
	dir := t.TempDir()
	s, store := openStorage(t, dir, 1<<20)
	if _, err := os.Stat(filepath.Join(dir, "logbook.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("an index before the first log: %v", err)
	}
	for range 3 {
		if _, err := s.Create(7); err != nil {
			t.Fatal(err)
		}
		if err := s.CloseLog(); err != nil {
			t.Fatal(err)
		}
	}
	// an index that lost logs 1 and 2 and the next id
	if err := store.WriteJSON("logbook.json", map[string]any{"entries": []logbook.Entry{{ID: 3, Modified: 7}}}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	logs := filepath.Join(dir, "logbook")
	log3, err := os.ReadFile(filepath.Join(logs, "00000003.sbem"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"00000000.sbem", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(logs, name), log3, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, _ = openStorage(t, dir, 1<<20)
	header := uint64(len(sbem.Header))
	want := []logbook.Entry{{ID: 1, Size: header}, {ID: 2, Size: header}, {ID: 3, Modified: 7, Size: header}}
	if got := s.Entries(); !reflect.DeepEqual(got, want) {
		t.Errorf("entries %+v, want %+v", got, want)
	}
	if id, err := s.Create(8); err != nil || id != 4 {
		t.Errorf("new log %d, %v; want 4", id, err)
	}
}

// A log may fill the storage to its last byte; of chunks that overflow
// it, those that fit are kept. An index that cannot be saved is an error
// of the log's closing.
func TestStorageFillsExactly(t *testing.T) {
	chunk := sbem.AppendChunk(nil, 100, []byte{1, 2, 3, 4})
	dir := t.TempDir()
	s, _ := openStorage(t, dir, len(sbem.Header)+2*len(chunk))
	if _, err := s.Create(1); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(chunk, 1); err != nil {
		t.Errorf("a chunk that fits: %v", err)
	}
	if err := s.Append(append(chunk, chunk...), 1); !errors.Is(err, logbook.ErrFull) {
		t.Errorf("two chunks where one fits: %v, want ErrFull", err)
	}
	if err := s.Append(chunk, 9); !errors.Is(err, logbook.ErrFull) {
		t.Errorf("a chunk more: %v, want ErrFull", err)
	}
	if es := s.Entries(); len(es) != 1 || es[0].Size != uint64(len(sbem.Header)+2*len(chunk)) || es[0].Modified != 1 {
		t.Errorf("entries %+v, want one log that fills the storage, modified when its last chunk was written", es)
	}
	index := filepath.Join(dir, "logbook.json")
	if err := os.Remove(index); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(index, "in the way"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.CloseLog(); err == nil {
		t.Error("the index could not be saved, and CloseLog reported nothing")
	}
}

// A new log erases the oldest only when it does not fit beside it: logs
// that fill the storage exactly are all kept.
func TestStorageKeepsLogsThatFitExactly(t *testing.T) {
	for _, tt := range []struct {
		capacity int
		ids      []uint32 // kept after three logs
	}{
		{3 * len(sbem.Header), []uint32{1, 2, 3}},
		{3*len(sbem.Header) - 1, []uint32{2, 3}},
	} {
		s, _ := openStorage(t, t.TempDir(), tt.capacity)
		for range 3 {
			if _, err := s.Create(1); err != nil {
				t.Fatal(err)
			}
			if err := s.CloseLog(); err != nil {
				t.Fatal(err)
			}
		}
		var ids []uint32
		for _, e := range s.Entries() {
			ids = append(ids, e.ID)
		}
		if !slices.Equal(ids, tt.ids) {
			t.Errorf("capacity %d: logs %v kept, want %v", tt.capacity, ids, tt.ids)
		}
	}
}

// A read of the log being written returns the chunks appended before it,
// not the part of an append that is still under way.
func TestStorageReadsWholeChunksOfTheOpenLog(t *testing.T) {
	dir := t.TempDir()
	s, _ := openStorage(t, dir, 1<<20)
	id, err := s.Create(7)
	if err != nil {
		t.Fatal(err)
	}
	chunk := sbem.AppendChunk(nil, 100, []byte{1, 2, 3, 4})
	if err := s.Append(chunk, 7); err != nil {
		t.Fatal(err)
	}
	want, err := s.Read(id)
	if err != nil {
		t.Fatal(err)
	}
	// the first bytes of the next append, written but not yet done
	f, err := os.OpenFile(filepath.Join(dir, "logbook", "00000001.sbem"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(chunk[:3]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, err := s.Read(id)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) || len(got) != len(sbem.Header)+len(chunk) {
		t.Errorf("read %d bytes while an append was under way; want the %d of the header and the whole chunk", len(got), len(want))
	}
	if _, _, err := sbem.Chunks(got); err != nil {
		t.Errorf("the read does not decode: %v", err)
	}
}

// An erase of every log that fails part way (a file that cannot be
// removed) lists no logs, holds none to erase alone, and is finished
// before the next log is made, which is numbered 1; until it can be
// finished no log is made and no id reserved (an id reserved then would
// be given again once the erase is finished).
func TestFailedEraseIsFinishedFirst(t *testing.T) {
	dir := t.TempDir()
	s, _ := openStorage(t, dir, 1<<20)
	for range 2 {
		if _, err := s.Create(7); err != nil {
			t.Fatal(err)
		}
		if err := s.CloseLog(); err != nil {
			t.Fatal(err)
		}
	}
	// a directory, not empty, where log 2's file was: it cannot be removed
	stuck := filepath.Join(dir, "logbook", "00000002.sbem")
	if err := os.Remove(stuck); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(stuck, "in the way"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.Clear(); err == nil {
		t.Fatal("an erase that could not remove a file reported nothing")
	}
	if es := s.Entries(); len(es) != 0 {
		t.Errorf("entries %+v after an erase that failed part way; want none", es)
	}
	if err := s.Remove(1); !errors.Is(err, logbook.ErrNoLog) {
		t.Errorf("log 1 erased alone after the erase of every log: %v; want ErrNoLog", err)
	}
	if _, err := s.Create(8); err == nil {
		t.Error("a log made while the erase cannot be finished")
	}
	if id, err := s.NewID(); err == nil {
		t.Errorf("id %d reserved while the erase cannot be finished", id)
	}
	if err := os.RemoveAll(stuck); err != nil {
		t.Fatal(err)
	}
	if id, err := s.Create(8); err != nil || id != 1 {
		t.Errorf("the next log: %d, %v; want 1", id, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "logbook", "00000001.sbem")); err != nil {
		t.Errorf("the new log 1: %v", err)
	}
	if es := s.Entries(); len(es) != 1 || es[0].ID != 1 || es[0].Modified != 8 {
		t.Errorf("entries %+v; want the new log 1 alone", es)
	}
}
