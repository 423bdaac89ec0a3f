package logbook

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"senseboard/sbem"
)

// failingLog is the log being written on a disk that fails: its writes
// stop after room bytes with ENOSPC, the bytes before that written to the
// file as a full disk leaves them; its syncs fail with EIO while badSync,
// and its truncations while badTruncate. cut says that a truncation is
// not yet made durable by a sync.
type failingLog struct {
	*os.File
	room                 int
	badSync, badTruncate bool
	cut                  bool
}

func (f *failingLog) Write(b []byte) (int, error) {
	if len(b) <= f.room {
		f.room -= len(b)
		return f.File.Write(b)
	}
	n, err := f.File.Write(b[:f.room])
	f.room -= n
	if err == nil {
		err = syscall.ENOSPC
	}
	return n, err
}

func (f *failingLog) Sync() error {
	if f.badSync {
		return syscall.EIO
	}
	f.cut = false
	return f.File.Sync()
}

func (f *failingLog) Truncate(size int64) error {
	if f.badTruncate {
		return syscall.EIO
	}
	f.cut = true
	return f.File.Truncate(size)
}

// A write that fails part way (a disk that fills in the middle of an
// append, or an fsync that fails after it) leaves the log as it was
// before it: the listed size is the file's, a read shows the whole chunks
// written before, the next append follows them, and the log reads the
// same after a restart. The cut back is durable (synced). A log that
// cannot be cut back takes no more data until it can, and is cut back
// when it is closed.
func TestFailedWriteLeavesTheLogAsItWas(t *testing.T) {
	first := sbem.AppendChunk(nil, 100, []byte{1, 2, 3, 4})
	failed := slices.Concat(sbem.AppendChunk(nil, 100, []byte{5, 6, 7, 8}), sbem.AppendChunk(nil, 100, []byte{9, 10, 11, 12}))
	next := sbem.AppendChunk(nil, 100, []byte{13, 14, 15, 16})
	for _, tt := range []struct {
		name    string
		fail    failingLog
		wantErr error
		close   bool // closed once it can be cut back, with nothing more appended
	}{
		{"full at once", failingLog{room: 0}, syscall.ENOSPC, false},
		{"full in a chunk", failingLog{room: 3}, syscall.ENOSPC, false},
		{"full after a whole chunk", failingLog{room: 6}, syscall.ENOSPC, false},
		{"full after a chunk and a half", failingLog{room: 9}, syscall.ENOSPC, false},
		{"fsync fails", failingLog{room: len(failed), badSync: true}, syscall.EIO, false},
		{"cannot cut back", failingLog{room: 3, badTruncate: true}, syscall.ENOSPC, false},
		{"cannot cut back, then closed", failingLog{room: 3, badTruncate: true}, syscall.ENOSPC, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openIn(t, dir)
			id, err := s.Create(1)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Append(first, 1); err != nil {
				t.Fatal(err)
			}
			disk := tt.fail
			disk.File = s.open.(*os.File)
			s.open = &disk
			if err := s.Append(failed, 2); !errors.Is(err, tt.wantErr) {
				t.Fatalf("the failed append: %v, want %v", err, tt.wantErr)
			}
			want := slices.Concat([]byte(sbem.Header), first)
			path := filepath.Join(s.dir, name(id))
			check := func(when string, want []byte) {
				t.Helper()
				if es := s.Entries(); len(es) != 1 || es[0].Size != uint64(len(want)) {
					t.Errorf("%s: entries %+v, want one log of %d bytes", when, es, len(want))
				}
				if got, err := s.Read(id); err != nil || !slices.Equal(got, want) {
					t.Errorf("%s: read %d bytes (%v), not the %d written", when, len(got), err, len(want))
				}
			}
			check("after the failed append", want)
			if disk.cut && !disk.badSync {
				t.Error("the log was cut back and not synced")
			}
			if disk.badTruncate {
				// The log cannot be cut back: it takes nothing more until
				// it can, and what it held is read as it was.
				if err := s.Append(next, 3); !errors.Is(err, syscall.EIO) {
					t.Errorf("an append to a log that cannot be cut back: %v, want EIO", err)
				}
				check("after the refused append", want)
				disk.badTruncate = false
			} else if b, err := os.ReadFile(path); err != nil || !slices.Equal(b, want) {
				t.Errorf("the file holds %d bytes (%v), want the %d of the whole chunks written before", len(b), err, len(want))
			}
			disk.room, disk.badSync = 1<<20, false
			if !tt.close {
				if err := s.Append(next, 3); err != nil {
					t.Fatal(err)
				}
				want = slices.Concat(want, next)
				check("after the next append", want)
			}
			if err := s.CloseLog(); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(path); err != nil || !slices.Equal(b, want) {
				t.Errorf("the file holds %d bytes (%v), want the %d appended", len(b), err, len(want))
			}
			s.store.Close()
			s = openIn(t, dir)
			check("after a restart", want)
		})
	}
}
