// Package nvm owns the device's non-volatile memory: a directory of
// crash-safe state files and the two EEPROM chips kept in it.
//
// Every file carries a header with its length and a CRC-32C of its contents,
// so a corrupt or truncated file is detected and reported by name, never
// read as zeros. A write replaces the whole file atomically: the new contents
// go to a temporary file that is fsynced and renamed over the old one
// (google/renameio), and then the directory is fsynced so the rename itself
// is durable. A crash at any moment leaves the old file or the new one,
// never a torn mix, and a write that returned is on disk.
package nvm

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/google/renameio/v2"
)

const (
	magic      = "SBNV"
	version    = 1
	headerSize = 16 // magic, version, 3 reserved bytes, length, CRC-32C
	lockName   = "lock"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CorruptError reports a state file that fails its checks.
type CorruptError struct {
	Path   string
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("state file %s is corrupt (%s); restore it from a backup, or delete it to start that part of the non-volatile memory afresh", e.Path, e.Reason)
}

// Store is a directory of state files, locked against use by another process.
type Store struct {
	dir  string
	lock *os.File
	mu   sync.Mutex
}

// Open opens (creating it if needed) the state directory dir and locks it.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("state directory %s is in use by another senseboard process; give each device its own --state directory", dir)
		}
		return nil, fmt.Errorf("lock state directory %s: %w", dir, err)
	}
	return &Store{dir: dir, lock: lock}, nil
}

// Dir returns the state directory.
func (s *Store) Dir() string { return s.dir }

// Close releases the directory's lock.
func (s *Store) Close() error {
	if s.lock == nil {
		return nil
	}
	err := s.lock.Close()
	s.lock = nil
	return err
}

// Path returns the path of the named state file.
func (s *Store) Path(name string) string { return filepath.Join(s.dir, name) }

// Read returns the contents of the named state file. A missing file is an
// error satisfying errors.Is(err, fs.ErrNotExist); a file that fails its
// checks is a *CorruptError.
func (s *Store) Read(name string) ([]byte, error) {
	path := s.Path(name)
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Decode(path, raw)
}

// Decode checks and strips the header of a state file's bytes.
func Decode(path string, raw []byte) ([]byte, error) {
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
	if uint64(len(body)) != uint64(n) {
		return nil, &CorruptError{path, fmt.Sprintf("truncated or extended: header says %d bytes, file holds %d", n, len(body))}
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
func (s *Store) Write(name string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := s.Path(name)
	if err := renameio.WriteFile(path, Encode(data), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := syncDir(s.dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// syncDir fsyncs a directory so that a rename in it is durable; renameio
// syncs the file, not its directory.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ReadJSON decodes the named state file into v. It reports false, with no
// error, when the file does not exist.
func (s *Store) ReadJSON(name string, v any) (bool, error) {
	data, err := s.Read(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, &CorruptError{s.Path(name), "contents do not decode: " + err.Error()}
	}
	return true, nil
}

// WriteJSON replaces the named state file with v encoded as JSON.
func (s *Store) WriteJSON(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	return s.Write(name, data)
}
