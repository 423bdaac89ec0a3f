package logbook_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"senseboard/logbook"
	"senseboard/nvm"
	"senseboard/sbem"
)

// FuzzOpenStorage opens the logs 1 and 3 under an index (logbook.json) of
// any contents, under a valid checksum or not: the storage opens, lists
// each log whose file it keeps once, in order (both, unless the index says
// they are being erased), and numbers a new log after them.
func FuzzOpenStorage(f *testing.F) {
	for _, seed := range []string{
		`{"nextId": 4, "entries": [{"Id": 1, "ModificationTimestamp": 7}, {"Id": 3, "ModificationTimestamp": 9}]}`,
		`{"nextId": 2, "entries": [{"Id": 1}, {"Id": 1}, {"Id": 2}]}`,
		`{"nextId": 1, "entries": [], "erasing": true}`,
		`{"nextId": 4294967295, "entries": null}`,
		`{"nextId": "four"}`,
		`null`,
	} {
		f.Add([]byte(seed), true)
	}
	f.Add([]byte("not a state file"), false)
	f.Fuzz(func(t *testing.T, body []byte, header bool) {
		dir := t.TempDir()
		logs := filepath.Join(dir, "logbook")
		if err := os.MkdirAll(logs, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"00000001.sbem", "00000003.sbem"} {
			if err := os.WriteFile(filepath.Join(logs, name), []byte(sbem.Header), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if header {
			body = nvm.Encode(body)
		}
		if err := os.WriteFile(filepath.Join(dir, "logbook.json"), body, 0o600); err != nil {
			t.Fatal(err)
		}
		store, err := nvm.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		s, err := logbook.OpenStorage(store, 1<<20)
		if err != nil {
			t.Fatalf("the storage does not open: %v", err)
		}
		var ids, files []uint32
		for _, e := range s.Entries() {
			ids = append(ids, e.ID)
		}
		for _, id := range []uint32{1, 3} {
			if _, err := os.Stat(filepath.Join(logs, fmt.Sprintf("%08d.sbem", id))); err == nil {
				files = append(files, id)
			}
		}
		if !slices.Equal(ids, files) || len(files) == 1 {
			t.Errorf("logs %v listed, %v on disk; want both, or none", ids, files)
		}
		if id, err := s.Create(1); err != nil || len(files) > 0 && id <= 3 || id == 0 {
			t.Errorf("a new log: %d, %v; want one numbered after %v", id, err, files)
		}
	})
}
