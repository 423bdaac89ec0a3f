package nvm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"senseboard/profile"
)

func TestStoreRoundTripAndCorruption(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Read("a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if err := s.Write("a", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Read("a"); err != nil || string(got) != "hello" {
		t.Fatalf("Read = %q, %v", got, err)
	}
	raw, _ := os.ReadFile(s.Path("a"))
	tests := []struct {
		name   string
		bytes  []byte
		reason string
	}{
		{"bit flip", flip(raw, len(raw)-1), "checksum mismatch"},
		{"truncated body", raw[:len(raw)-2], "truncated: the header says 5 bytes, the file holds 3"},
		{"extended body", append(raw[:len(raw):len(raw)], 0), "extended: the header says 5 bytes, the file holds 6"},
		{"truncated header", raw[:7], "truncated"},
		{"empty", nil, "truncated"},
		{"bad magic", append([]byte("XXXX"), raw[4:]...), "bad magic"},
		{"other version", flip(raw, 4), "format version"},
		{"zeros", make([]byte, len(raw)), "bad magic"},
	}
	for _, tt := range tests {
		os.WriteFile(s.Path("a"), tt.bytes, 0o644)
		_, err := s.Read("a")
		var ce *CorruptError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.reason) || !strings.Contains(err.Error(), s.Path("a")) {
			t.Errorf("%s: %v, want a CorruptError naming the file and %q", tt.name, err, tt.reason)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0x01
	return c
}

func TestStoreIsLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrInUse) || strings.Count(err.Error(), "in use by another") != 1 {
		t.Errorf("second Open: %v, want ErrInUse, said once", err)
	}
	s.Close()
	s2, err := Open(dir)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s2.Close()
}

func TestJSON(t *testing.T) {
	s, _ := Open(t.TempDir())
	defer s.Close()
	var v struct{ A int }
	if ok, err := s.ReadJSON("x.json", &v); ok || err != nil {
		t.Fatalf("missing: %v %v", ok, err)
	}
	s.WriteJSON("x.json", struct{ A int }{7})
	if ok, err := s.ReadJSON("x.json", &v); !ok || err != nil || v.A != 7 {
		t.Fatalf("ReadJSON = %v %v %+v", ok, err, v)
	}
	s.Write("x.json", []byte("{nope"))
	if _, err := s.ReadJSON("x.json", &v); err == nil {
		t.Error("undecodable contents accepted")
	}
}

func TestEEPROM(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir)
	e, err := OpenEEPROM(s)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := e.Read(1, 100, 3); !bytes.Equal(b, []byte{0xFF, 0xFF, 0xFF}) {
		t.Errorf("erased chip reads %v", b)
	}
	var watched []string
	e.Watch(func(c Change) { watched = append(watched, fmt.Sprintf("%d %d %v %v", c.Chip, c.Addr, c.Data, c.By)) })
	if err := e.Write(1, profile.ChipSize-2, []byte{1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := e.Write(0, 0, []byte{9}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ chip, addr, n int }{{2, 0, 1}, {-1, 0, 1}, {0, profile.ChipSize - 1, 2}, {0, -1, 1}} {
		if err := e.Write(c.chip, c.addr, make([]byte, c.n)); err == nil {
			t.Errorf("write %v accepted", c)
		}
		if _, err := e.Read(c.chip, c.addr, c.n); err == nil {
			t.Errorf("read %v accepted", c)
		}
	}
	if err := e.WriteFunc("me", 0, 1, 2, func(b []byte) { b[0], b[1] = b[0]+1, b[1]+2 }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(watched) != fmt.Sprintf("[1 %d [1 2] <nil> 0 0 [9] <nil> 0 1 [0 1] me]", profile.ChipSize-2) {
		t.Errorf("watchers saw %v", watched)
	}
	s.Close()
	s, _ = Open(dir)
	defer s.Close()
	e, err = OpenEEPROM(s)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := e.Read(1, profile.ChipSize-2, 2); !bytes.Equal(b, []byte{1, 2}) {
		t.Errorf("after reopen chip 1 reads %v", b)
	}
	if b, _ := e.Read(0, 0, 4); !bytes.Equal(b, []byte{9, 0, 1, 0xFF}) {
		t.Errorf("after reopen chip 0 reads %v", b)
	}
	raw, _ := os.ReadFile(s.Path(ChipFile(0)))
	os.WriteFile(s.Path(ChipFile(0)), raw[:1000], 0o644)
	if _, err := OpenEEPROM(s); err == nil || !strings.Contains(err.Error(), "eeprom0.bin is corrupt") {
		t.Errorf("truncated chip: %v", err)
	}
}

// The writer side of TestCrashDuringWrites: it runs in a child process,
// writes numbered records as fast as it can and prints each number once the
// write returned.
func TestMain(m *testing.M) {
	if dirs := os.Getenv("NVM_LOCK_HOLDER"); dirs != "" {
		holdLocks(strings.Split(dirs, ","))
	}
	if dir := os.Getenv("NVM_CRASH_WRITER"); dir != "" {
		s, err := Open(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		start, _ := strconv.Atoi(os.Getenv("NVM_CRASH_START"))
		for i := start; ; i++ {
			// A large record whose every byte depends on i: a torn file
			// would mix two records.
			rec := bytes.Repeat([]byte(fmt.Sprintf("%08d", i)), 4096)
			if err := s.Write("rec", rec); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			fmt.Println(i)
		}
	}
	os.Exit(m.Run())
}

// TestCrashDuringWrites kills a process that writes in a loop after a
// random number of acknowledged records, and checks each time that the
// file holds the last acknowledged record or the one after it, whole, and
// that nothing else is left in the directory or in $TMPDIR once it is
// opened again. It stops once enough records were acknowledged, so it does
// the same work on a fast machine and a slow one.
func TestCrashDuringWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes in a loop")
	}
	const (
		wantRecords = 100
		maxRounds   = 100 // about 8 are needed
	)
	dir, tmp := t.TempDir(), t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	next := 0
	for round := 0; next < wantRecords; round++ {
		if round == maxRounds {
			t.Fatalf("only %d records were written in %d rounds", next, round)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "NVM_CRASH_WRITER="+dir, "NVM_CRASH_START="+strconv.Itoa(next), "TMPDIR="+tmp)
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked := -1
		sc := bufio.NewScanner(out)
		killAfter := next + rng.IntN(25)
		for sc.Scan() {
			acked, _ = strconv.Atoi(sc.Text())
			if acked >= killAfter {
				break
			}
		}
		cmd.Process.Kill()
		for sc.Scan() { // acknowledgements already written before the kill
			acked, _ = strconv.Atoi(sc.Text())
		}
		cmd.Wait()
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		data, err := s.Read("rec")
		s.Close()
		if entries, _ := os.ReadDir(dir); len(entries) > 2 {
			t.Errorf("round %d: the directory holds %d entries after Open, want lock and rec", round, len(entries))
		}
		if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
			t.Errorf("round %d: TMPDIR holds %s", round, entries[0].Name())
		}
		if acked < 0 {
			t.Fatalf("round %d: the writer acknowledged nothing", round)
		}
		if err != nil {
			t.Fatalf("round %d: after acknowledging %d: %v", round, acked, err)
		}
		got, _ := strconv.Atoi(string(data[:8]))
		if got != acked && got != acked+1 {
			t.Fatalf("round %d: file holds record %d, last acknowledged %d", round, got, acked)
		}
		if !bytes.Equal(data, bytes.Repeat(data[:8], 4096)) {
			t.Fatalf("round %d: record %d is torn", round, got)
		}
		next = got + 1
	}
}

// holdLocks is the other program of TestLockAcrossProcesses: it opens the
// state directories, says so, and holds them until it is killed.
func holdLocks(dirs []string) {
	for _, d := range dirs {
		if _, err := Open(d); err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin) // until killed, or until the test's end of the pipe closes
	os.Exit(0)
}

// TestLockAcrossProcesses: state directories that another process holds,
// in the same parent as directories this process holds, cannot be opened
// until that process ends (killed: the kernel releases its locks), and
// the directories beside them can.
func TestLockAcrossProcesses(t *testing.T) {
	parent := t.TempDir()
	dir := func(name string) string { return filepath.Join(parent, name) }
	mine, err := Open(dir("000001"))
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NVM_LOCK_HOLDER="+dir("000002")+","+dir("000003"))
	out, _ := cmd.StdoutPipe()
	if _, err := cmd.StdinPipe(); err != nil { // closed when this process ends, however it ends
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "locked" {
		t.Fatalf("the other process did not lock its directories: %q", sc.Text())
	}
	for _, name := range []string{"000002", "000003"} {
		if s, err := Open(dir(name)); !errors.Is(err, ErrInUse) {
			if err == nil {
				s.Close()
			}
			t.Errorf("Open %s, held by another process: %v, want ErrInUse", name, err)
		}
	}
	other, err := Open(dir("000004"))
	if err != nil {
		t.Fatalf("Open of a free directory beside them: %v", err)
	}
	other.Close()
	cmd.Process.Kill()
	cmd.Wait()
	for _, name := range []string{"000002", "000003"} {
		s, err := Open(dir(name))
		if err != nil {
			t.Fatalf("Open %s after the other process ended: %v", name, err)
		}
		s.Close()
	}
}

// TestLocksShareOneFile: the stores of many directories of one parent
// hold one file descriptor between them, and the last to close lets it go.
func TestLocksShareOneFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("directories lock by a file of their own on " + runtime.GOOS)
	}
	openFDs := func() int {
		e, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(e)
	}
	parent := t.TempDir()
	before := openFDs()
	var stores []*Store
	for i := range 50 {
		s, err := Open(filepath.Join(parent, strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	if n := openFDs() - before; n != 1 {
		t.Errorf("50 open stores hold %d file descriptors, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(parent, SharedLockName)); err != nil {
		t.Errorf("no shared lock file: %v", err)
	}
	for _, s := range stores {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := openFDs() - before; n != 0 {
		t.Errorf("closed stores hold %d file descriptors, want 0", n)
	}
}

// TestLockThroughSymlink: a state directory named through a symbolic link
// in another directory is the same directory, locked alike.
func TestLockThroughSymlink(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	real, link := filepath.Join(a, "000001"), filepath.Join(b, "000001")
	s, err := Open(real)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.Symlink(real, link); err != nil {
		t.Skip(err)
	}
	if s2, err := Open(link); !errors.Is(err, ErrInUse) {
		if err == nil {
			s2.Close()
		}
		t.Errorf("Open through a link to a directory in use: %v, want ErrInUse", err)
	}
}

// TestNoSharedLockWhereOthersWrite: in a directory others may write in,
// such as /tmp, state directories lock by a file of their own, so that
// another user's lock file there cannot keep this user's programs out;
// they still exclude each other.
func TestNoSharedLockWhereOthersWrite(t *testing.T) {
	parent := t.TempDir()
	if err := os.Chmod(parent, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "000001")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(filepath.Join(parent, SharedLockName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a shared lock file in a directory others write in: %v", err)
	}
	if s2, err := Open(dir); !errors.Is(err, ErrInUse) {
		if err == nil {
			s2.Close()
		}
		t.Errorf("second Open: %v, want ErrInUse", err)
	}
}

// TestSizeLimit writes and reads state files at and next to MaxFileSize:
// the largest contents a file holds round-trip, as empty contents do, one byte more is refused by
// Write and leaves the old file, and a file on disk one byte over the limit
// is corrupt even when its first MaxFileSize bytes are a valid state file.
func TestSizeLimit(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	largest := bytes.Repeat([]byte{'x'}, MaxFileSize-headerSize)
	for _, tt := range []struct {
		name string
		size int
		ok   bool
	}{
		{"empty", 0, true},
		{"largest", MaxFileSize - headerSize, true},
		{"one byte under", MaxFileSize - headerSize - 1, true},
		{"one byte over", MaxFileSize - headerSize + 1, false},
		{"a header over", MaxFileSize, false},
	} {
		if err := s.Write("old", []byte("before")); err != nil {
			t.Fatal(err)
		}
		data := bytes.Repeat([]byte{'y'}, tt.size)
		err := s.Write("old", data)
		most := fmt.Sprintf("more than a state file holds (%d)", MaxFileSize-headerSize)
		if tt.ok != (err == nil) || err != nil && !strings.Contains(err.Error(), most) {
			t.Errorf("%s: Write of %d bytes: %v, want ok %v", tt.name, tt.size, err, tt.ok)
		}
		want := data
		if !tt.ok {
			want = []byte("before")
		}
		if got, err := s.Read("old"); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: Read after Write of %d bytes: %d bytes, %v; want %d bytes", tt.name, tt.size, len(got), err, len(want))
		}
	}

	full := Encode(largest)
	if len(full) != MaxFileSize {
		t.Fatalf("the largest state file is %d bytes, want %d", len(full), MaxFileSize)
	}
	for _, tt := range []struct {
		name   string
		raw    []byte
		reason string // "" when the file is good
	}{
		{"exactly MaxFileSize", full, ""},
		{"a valid file and one byte more", append(full[:len(full):len(full)], 0), fmt.Sprintf("more than %d bytes", MaxFileSize)},
	} {
		if got, err := Decode("f", tt.raw); tt.reason == "" && (err != nil || !bytes.Equal(got, largest)) {
			t.Errorf("Decode %s: %d bytes, %v", tt.name, len(got), err)
		} else if tt.reason != "" && (err == nil || !strings.Contains(err.Error(), tt.reason)) {
			t.Errorf("Decode %s: %v, want %q", tt.name, err, tt.reason)
		}
		if err := os.WriteFile(s.Path("f"), tt.raw, 0o600); err != nil {
			t.Fatal(err)
		}
		var ce *CorruptError
		if got, err := s.Read("f"); tt.reason == "" && (err != nil || !bytes.Equal(got, largest)) {
			t.Errorf("Read %s: %d bytes, %v", tt.name, len(got), err)
		} else if tt.reason != "" && (!errors.As(err, &ce) || !strings.Contains(err.Error(), tt.reason)) {
			t.Errorf("Read %s: %v, want a CorruptError saying %q", tt.name, err, tt.reason)
		}
	}
}

// TestEEPROMSpans reads and writes at the chips' ends: a span that ends at
// the end is good, one byte more is not, and an empty span is good
// anywhere up to the end (a GET of length 0 reads nothing).
func TestEEPROMSpans(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e, err := OpenEEPROM(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		chip, addr, n int
		ok            bool
	}{
		{0, 0, 0, true},
		{1, profile.ChipSize, 0, true},
		{1, profile.ChipSize - 3, 3, true},
		{1, profile.ChipSize - 3, 4, false},
		{0, profile.ChipSize + 1, 0, false},
		{0, -1, 0, false},
		{0, 0, -1, false},
		{profile.Chips - 1, 0, 1, true},
		{profile.Chips, 0, 1, false},
	} {
		b, err := e.Read(tt.chip, tt.addr, tt.n)
		if tt.ok != (err == nil) || tt.ok && len(b) != tt.n {
			t.Errorf("Read(%d, %d, %d): %d bytes, %v; want ok %v", tt.chip, tt.addr, tt.n, len(b), err, tt.ok)
		}
		if tt.n < 0 {
			continue
		}
		if err := e.Write(tt.chip, tt.addr, bytes.Repeat([]byte{7}, tt.n)); tt.ok != (err == nil) {
			t.Errorf("Write(%d, %d, %d bytes): %v; want ok %v", tt.chip, tt.addr, tt.n, err, tt.ok)
		}
	}
}
