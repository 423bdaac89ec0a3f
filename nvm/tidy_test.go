package nvm

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"senseboard/internal/fsperm"
)

func TestLeftover(t *testing.T) {
	for name, want := range map[string]bool{
		".eeprom0.bin1234567890123": true,
		".ble.json42":               true,
		".tty8":                     true,
		"eeprom0.bin":               false,
		".eeprom0.bin":              false,
		".1234":                     false,
		"..x12":                     false,
		".git":                      false,
		"notes1":                    false,
		"lock":                      false,
	} {
		if got := Leftover(name); got != want {
			t.Errorf("Leftover(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestOpenTidies: opening a state directory removes what interrupted
// writes left (renameio's temporary files and link directories), keeps
// everything else, and takes group and other permissions away.
func TestOpenTidies(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode fs.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(dir, name), mode)
	}
	write(".eeprom0.bin8674665223082153551", 0o600)
	write(".keys.json77", 0o644)
	os.Symlink("/dev/pts/9", filepath.Join(dir, ".tty123"))
	os.Mkdir(filepath.Join(dir, ".tty456"), 0o700)
	os.Symlink("/dev/pts/9", filepath.Join(dir, ".tty456", "tmp.symlink"))
	os.Mkdir(filepath.Join(dir, ".cache1"), 0o700) // a directory with other contents stays
	write(".cache1/mine", 0o600)
	write("ble.json", 0o644)
	write("keys.json", 0o666)
	write("eeprom0.bin", 0o400)
	write(".profile", 0o644)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := map[string]string{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		fi, _ := os.Lstat(filepath.Join(dir, e.Name()))
		got[e.Name()] = fi.Mode().String()
	}
	want := map[string]string{
		".cache1": "drwx------", "ble.json": "-rw-------", "keys.json": "-rw-------", "eeprom0.bin": "-r--------",
		".profile": "-rw-------",
	}
	if !equalMaps(got, want) {
		t.Errorf("after Open:\n got %v\nwant %v", sorted(got), sorted(want))
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func sorted(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+" "+v)
	}
	sort.Strings(out)
	return out
}

// TestWriteKeepsTemporaryFilesInTheDirectory: a write's temporary file is
// made next to the state file, not in $TMPDIR, and the file is private
// whatever its mode was.
func TestWriteKeepsTemporaryFilesInTheDirectory(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write("keys.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	os.Chmod(s.Path("keys.json"), 0o644)
	// a directory where the state file should be makes the rename fail
	// after the temporary file was written
	os.Mkdir(s.Path("other.json"), 0o700)
	if err := s.Write("other.json", []byte("{}")); err == nil {
		t.Error("a write over a directory succeeded")
	}
	os.Remove(s.Path("other.json"))
	if err := s.Write("keys.json", []byte(`{"a":"b"}`)); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(s.Path("keys.json")); fi.Mode().Perm() != Perm {
		t.Errorf("keys.json has mode %v after a write", fi.Mode())
	}
	if e, _ := os.ReadDir(tmp); len(e) != 0 {
		t.Errorf("TMPDIR holds %d entries after writes: %v", len(e), e[0].Name())
	}
	var names []string
	e, _ := os.ReadDir(dir)
	for _, x := range e {
		names = append(names, x.Name())
	}
	if strings.Join(names, " ") != "keys.json" {
		t.Errorf("the state directory holds %v", names)
	}
}

// TestUnusableFiles: a file that cannot be read, a directory, a pipe or a
// file too large for a state file is refused by name without blocking.
// Unreadable files are files of mode 0 read from a thread without root's
// permission override (internal/fsperm).
func TestUnusableFiles(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tt := range []struct {
		name   string
		make   func(path string) error
		target any
		is     error
	}{
		{"unreadable", func(p string) error { return os.WriteFile(p, Encode(nil), 0) }, new(*AccessError), fs.ErrPermission},
		{"directory", func(p string) error { return os.Mkdir(p, 0o700) }, new(*AccessError), ErrNotRegular},
		{"pipe", func(p string) error { return syscall.Mkfifo(p, 0o600) }, new(*AccessError), ErrNotRegular},
		{"device", func(p string) error { return os.Symlink("/dev/zero", p) }, new(*AccessError), ErrNotRegular},
		{"huge", func(p string) error { return os.WriteFile(p, make([]byte, MaxFileSize+1), 0o600) }, new(*CorruptError), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name := tt.name + ".json"
			if err := tt.make(s.Path(name)); err != nil {
				t.Fatal(err)
			}
			var rerr error
			if err := fsperm.Enforced(func() { _, rerr = s.Read(name) }); err != nil {
				t.Fatal(err)
			}
			if !errors.As(rerr, tt.target) || tt.is != nil && !errors.Is(rerr, tt.is) || !strings.Contains(rerr.Error(), s.Path(name)) {
				t.Errorf("Read = %v, want %T (%v) naming the file", rerr, tt.target, tt.is)
			}
		})
	}
}
