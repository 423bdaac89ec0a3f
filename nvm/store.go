// Package nvm owns the device's non-volatile memory: a directory of
// crash-safe state files and the two EEPROM chips kept in it.
//
// Every file carries a header with its length and a CRC-32C of its contents,
// so a corrupt or truncated file is detected and reported by name, never
// read as zeros. A write replaces the whole file atomically: the new contents
// go to a temporary file in the state directory itself (so on the same file
// system), which is fsynced and renamed over the old one (google/renameio),
// and then the directory is fsynced so the rename itself is durable. A crash
// at any moment leaves the old file or the new one, never a torn mix, and a
// write that returned is on disk. The temporary file of a write that a crash
// interrupted is removed when the directory is opened next.
//
// State files are private to their owner (mode 0600): some hold pairing
// keys. Opening a directory takes group and other permissions away from the
// files already in it.
//
// A state directory is locked while a Store has it open, so that two
// programs, or two devices of one program, cannot use it at once; the
// locks of the directories of one parent share one file descriptor
// (lock.go).
package nvm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/google/renameio/v2"
)

const (
	magic      = "SBNV"
	version    = 1
	headerSize = 16 // magic, version, 3 reserved bytes, length, CRC-32C

	// MaxFileSize is the largest state file read, header included: room
	// for an EEPROM chip and more. A larger file is corrupt.
	MaxFileSize = 1 << 20

	// Perm is the mode of every state file.
	Perm fs.FileMode = 0o600
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CorruptError reports a state file whose contents fail their checks.
type CorruptError struct {
	Path   string
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("state file %s is corrupt (%s); restore it from a backup, or delete it to start that part of the non-volatile memory afresh", e.Path, e.Reason)
}

// AccessError reports a state file, or the state directory, that the
// program cannot use: it cannot be opened or read, or it is not a regular
// file (a directory, a device, a pipe). Err is the underlying error.
type AccessError struct {
	Path string
	Err  error
}

// ErrNotRegular is the Err of an AccessError for something that is not a
// regular file where a state file should be.
var ErrNotRegular = errors.New("not a regular file")

func (e *AccessError) Error() string {
	var what, fix string
	switch {
	case errors.Is(e.Err, ErrNotRegular), errors.Is(e.Err, syscall.EISDIR):
		what, fix = "is not a regular file", "move it out of the way; senseboard keeps a file of its own there"
	case errors.Is(e.Err, fs.ErrPermission):
		what, fix = "cannot be used: permission denied", "run senseboard as the owner of the state directory, or give that user read and write access to it"
	default:
		what, fix = fmt.Sprintf("cannot be used (%v)", unwrapPath(e.Err)), "check the disk and the path, or restore the file from a backup"
	}
	return fmt.Sprintf("state file %s %s; %s", e.Path, what, fix)
}

func (e *AccessError) Unwrap() error { return e.Err }

// unwrapPath drops the path an *fs.PathError repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// DirError reports a state directory that cannot be created, opened or
// locked.
type DirError struct {
	Dir string
	Err error
}

func (e *DirError) Error() string {
	fix := "check the path, or give each device a directory of its own with --state"
	if errors.Is(e.Err, fs.ErrPermission) {
		fix = "run senseboard as the directory's owner, or give that user read and write access to it"
	}
	return fmt.Sprintf("state directory %s cannot be used (%v); %s", e.Dir, unwrapPath(e.Err), fix)
}

func (e *DirError) Unwrap() error { return e.Err }

// ErrInUse is the Err of a DirError for a directory that another process
// holds.
var ErrInUse = errors.New("in use by another senseboard process")

// Store is a directory of state files, locked against use by another
// process or another Store (lock.go says how).
type Store struct {
	dir  string
	lock *dirLock
	mu   sync.Mutex
}

// Open opens (creating it if needed) the state directory dir and locks it.
// It removes what interrupted writes left behind and makes the files in it
// private to their owner.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, &DirError{dir, err}
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s := &Store{dir: dir, lock: lock}
	if err := s.tidy(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// regular reports ErrNotRegular unless f is a regular file.
func regular(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return ErrNotRegular
	}
	return nil
}

// Leftover reports whether a name in a state directory is the temporary
// file of a write that did not finish: a dot, a state file's name and the
// random digits renameio adds. State files never start with a dot.
func Leftover(name string) bool {
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return false
	}
	base := strings.TrimRight(rest, "0123456789")
	return base != "" && base != rest && !strings.HasPrefix(base, ".")
}

// tidy removes leftovers of interrupted writes and takes group and other
// permissions away from the regular files.
func (s *Store) tidy() error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return &DirError{s.dir, err}
	}
	for _, e := range entries {
		path := filepath.Join(s.dir, e.Name())
		switch {
		case Leftover(e.Name()) && (e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0):
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return &AccessError{path, err}
			}
		case Leftover(e.Name()) && e.IsDir():
			// renameio.Symlink makes its link in a directory of its own
			// (the pseudo-terminal's link): remove that link and the
			// directory, and nothing else.
			os.Remove(filepath.Join(path, "tmp.symlink"))
			os.Remove(path)
		case e.Type().IsRegular():
			fi, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return &AccessError{path, err}
			}
			if m := fi.Mode().Perm(); m&^Perm != 0 {
				if err := os.Chmod(path, m&Perm); err != nil {
					return &AccessError{path, err}
				}
			}
		}
	}
	return nil
}

// Dir returns the state directory.
func (s *Store) Dir() string { return s.dir }

// Close releases the directory's lock.
func (s *Store) Close() error {
	if s.lock == nil {
		return nil
	}
	err := s.lock.release()
	s.lock = nil
	return err
}

// Path returns the path of the named state file.
func (s *Store) Path(name string) string { return filepath.Join(s.dir, name) }

// checkName refuses names that are not state files of this directory.
func checkName(name string) error {
	if name == "" || name == lockName || strings.HasPrefix(name, ".") || strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("nvm: %q cannot name a state file: a plain name, not starting with a dot, other than %q", name, lockName)
	}
	return nil
}

// Read returns the contents of the named state file. A missing file is an
// error satisfying errors.Is(err, fs.ErrNotExist); a file that cannot be
// read, or is not a regular file, is an *AccessError; a file that fails its
// checks is a *CorruptError.
func (s *Store) Read(name string) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	path := s.Path(name)
	raw, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, &AccessError{path, err}
	}
	return Decode(path, raw)
}

// readFile reads at most MaxFileSize+1 bytes of a regular file. It opens
// without blocking, so that a pipe in the file's place is refused rather
// than waited on.
func readFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := regular(f); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(f, MaxFileSize+1))
}

// Decode checks and strips the header of a state file's bytes.
func Decode(path string, raw []byte) ([]byte, error) {
	if len(raw) > MaxFileSize {
		return nil, &CorruptError{path, fmt.Sprintf("extended: more than %d bytes", MaxFileSize)}
	}
	if len(raw) < headerSize {
		return nil, &CorruptError{path, fmt.Sprintf("truncated: %d bytes, shorter than its header", len(raw))}
	}
	if string(raw[:4]) != magic {
		return nil, &CorruptError{path, "not a senseboard state file (bad magic)"}
	}
	if raw[4] != version {
		return nil, &CorruptError{path, fmt.Sprintf("format version %d, this program reads %d", raw[4], version)}
	}
	n := binary.LittleEndian.Uint32(raw[8:12])
	body := raw[headerSize:]
	if uint64(len(body)) < uint64(n) {
		return nil, &CorruptError{path, fmt.Sprintf("truncated: the header says %d bytes, the file holds %d", n, len(body))}
	}
	if uint64(len(body)) > uint64(n) {
		return nil, &CorruptError{path, fmt.Sprintf("extended: the header says %d bytes, the file holds %d", n, len(body))}
	}
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(raw[12:16]) {
		return nil, &CorruptError{path, "checksum mismatch"}
	}
	return body, nil
}

// Encode returns data with a state file's header.
func Encode(data []byte) []byte {
	out := make([]byte, headerSize+len(data))
	copy(out, magic)
	out[4] = version
	binary.LittleEndian.PutUint32(out[8:12], uint32(len(data)))
	binary.LittleEndian.PutUint32(out[12:16], crc32.Checksum(data, castagnoli))
	copy(out[headerSize:], data)
	return out
}

// Write replaces the named state file with data, durably and atomically.
// The file's mode is Perm, whatever it was before.
func (s *Store) Write(name string, data []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	if len(data)+headerSize > MaxFileSize {
		return fmt.Errorf("nvm: %s: %d bytes is more than a state file holds (%d)", name, len(data), MaxFileSize-headerSize)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	path := s.Path(name)
	if err := writeFile(s.dir, path, Encode(data)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := SyncDir(s.dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeFile replaces path atomically with data, by way of a temporary
// file in dir, and gives it mode Perm whatever the mode of the file it
// replaces.
func writeFile(dir, path string, data []byte) error {
	t, err := renameio.NewPendingFile(path, renameio.WithTempDir(dir), renameio.WithStaticPermissions(Perm))
	if err != nil {
		return err
	}
	defer t.Cleanup()
	if _, err := t.Write(data); err != nil {
		return err
	}
	return t.CloseAtomicallyReplace()
}

// SyncDir fsyncs a directory so that a file created or renamed in it is
// durable; renameio syncs the file, not its directory.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ReadJSON decodes the named state file into v. It reports false, with no
// error, when the file does not exist. The contents must be one JSON value
// with no field that v lacks, and not null; anything else is a
// *CorruptError.
func (s *Store) ReadJSON(name string, v any) (bool, error) {
	data, err := s.Read(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := DecodeJSON(data, v); err != nil {
		return false, &CorruptError{s.Path(name), err.Error()}
	}
	return true, nil
}

// DecodeJSON decodes data strictly into v: one JSON value, not null, with
// no field that v lacks.
func DecodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("contents do not decode: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("contents do not decode: more after the JSON value")
	}
	if string(raw) == "null" {
		return errors.New("contents are null, not a value")
	}
	dec = json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("contents do not decode: %v", err)
	}
	return nil
}

// WriteJSON replaces the named state file with v encoded as JSON.
func (s *Store) WriteJSON(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	return s.Write(name, data)
}
