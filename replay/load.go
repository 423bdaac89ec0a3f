package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MaxFile is the largest recording file read.
const MaxFile = 1 << 30

// Load reads a recording, choosing the format by the file's name and
// contents. For a WFDB record give the .hea file (or the record path
// without extension); its .dat and, when present, .atr are read beside it.
// A header whose record line names another record than its file's name is
// refused (wfdb.ErrRecordName), as WFDB's library refuses it.
func Load(path string) (*Recording, error) {
	ext := strings.ToLower(filepath.Ext(path))
	if ext == ".dat" || ext == ".atr" || ext == "" {
		if _, err := os.Stat(strings.TrimSuffix(path, filepath.Ext(path)) + ".hea"); err == nil {
			path, ext = strings.TrimSuffix(path, filepath.Ext(path))+".hea", ".hea"
		}
	}
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(path)
	if ext == ".hea" {
		h, err := parseHeader(name, data)
		if err != nil {
			return nil, err
		}
		if err := h.CheckName(path); err != nil {
			return nil, err // it names the file
		}
		dir := filepath.Dir(path)
		dat, err := readFile(filepath.Join(dir, filepath.Base(h.Signals[0].File)))
		if err != nil {
			return nil, err
		}
		atr, err := readFile(strings.TrimSuffix(path, ext) + ".atr")
		if errors.Is(err, fs.ErrNotExist) {
			atr = nil
		} else if err != nil {
			return nil, err
		}
		return wfdbRecord(name, h, dat, atr, -1)
	}
	return Parse(name, data)
}

func readFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	if st.Size() > MaxFile {
		return nil, fmt.Errorf("recording %s: %d bytes; at most %d are read", path, st.Size(), MaxFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	return b, nil
}

// Parse reads a recording from its contents (every format but WFDB, which
// spans several files).
func Parse(name string, data []byte) (*Recording, error) {
	head := bytes.TrimLeft(data, " \t\r\n\xef\xbb\xbf")
	switch {
	case len(head) == 0:
		return nil, fmt.Errorf("%s: empty", name)
	case head[0] == '{' && bytes.Contains(head[:min(len(head), 64)], []byte(`"Meas"`)):
		return IMU9Logbook(name, data)
	case head[0] == '{':
		return JSONLines(name, data)
	case bytes.HasPrefix(head, []byte("Timestamp_ms")):
		return ECGCSV(name, data)
	}
	first := head
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		first = head[:i]
	}
	if bytes.Contains(data[:min(len(data), 4096)], []byte("Timestamp,Sample")) && !bytes.HasPrefix(first, []byte("#")) {
		return ECGCSV(name, data)
	}
	if bytes.HasPrefix(first, []byte("#")) || bytes.HasPrefix(first, []byte("LoopingTimeStamp:")) || bytes.HasPrefix(first, []byte("Timestamp")) {
		return TableCSV(name, data)
	}
	return nil, fmt.Errorf("%s: not a recording format senseboard reads (senseboard CSV or JSON Lines, PC-simulator CSV, logbook JSON, ECG CSV export, WFDB)", name)
}
