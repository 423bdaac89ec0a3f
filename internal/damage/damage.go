// Package damage damages state files in the ways files get damaged, for
// tests of what programs do with damaged state: each Kind changes one
// file and says what an error about it should mention.
package damage

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"senseboard/nvm"
)

// A Kind is one way of damaging a state file.
type Kind struct {
	Name string
	// Apply damages the file at path.
	Apply func(path string) error
	// Unreadable says the damage is the file's permissions: run the code
	// under test with fsperm.Enforced, so that root meets them too.
	Unreadable bool
	// Reason is what an error about the damage says, besides the path.
	Reason string
}

// Files are the kinds of damage of any state file.
func Files() []Kind {
	return []Kind{
		{"truncated", func(p string) error {
			return edit(p, func(raw []byte) []byte { return raw[:len(raw)/2] })
		}, false, "truncated"},
		{"extended", func(p string) error {
			return edit(p, func(raw []byte) []byte { return append(raw, "more"...) })
		}, false, "extended"},
		{"huge", func(p string) error {
			return os.WriteFile(p, make([]byte, nvm.MaxFileSize+10), nvm.Perm)
		}, false, "extended"},
		{"checksum mismatch", func(p string) error {
			return edit(p, func(raw []byte) []byte { raw[len(raw)-1] ^= 0x40; return raw })
		}, false, "checksum mismatch"},
		{"directory", func(p string) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.MkdirAll(filepath.Join(p, "inside"), 0o700)
		}, false, "not a regular file"},
		Unreadable(),
	}
}

// Unreadable is a file of mode 0.
func Unreadable() Kind {
	return Kind{"unreadable", func(p string) error { return os.Chmod(p, 0) }, true, "permission denied"}
}

// Directory is a directory where the file should be.
func Directory() Kind { return Files()[4] }

// JSON are the kinds of damage of a JSON state file, besides those of
// Files: contents with a valid checksum that are not a value of the file.
func JSON() []Kind {
	return []Kind{
		{"malformed JSON", func(p string) error {
			return Rewrite(p, func(b []byte) []byte { return b[:len(b)-1] })
		}, false, "do not decode"},
		{"unknown field", func(p string) error {
			return Field(p, func(m map[string]any) { m["Surprise"] = 1 })
		}, false, "unknown field"},
		{"null", func(p string) error {
			return Rewrite(p, func([]byte) []byte { return []byte("null") })
		}, false, "null"},
	}
}

// OutOfRange is a well-formed JSON state file, with a valid checksum, that
// holds a value a client could not write.
func OutOfRange(name string, change func(m map[string]any), reason string) Kind {
	return Kind{name, func(p string) error { return Field(p, change) }, false, reason}
}

func edit(path string, f func([]byte) []byte) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, f(raw), nvm.Perm)
}

// Rewrite gives a state file new contents with a valid header and
// checksum.
func Rewrite(path string, f func(body []byte) []byte) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	body, err := nvm.Decode(path, raw)
	if err != nil {
		return err
	}
	return os.WriteFile(path, nvm.Encode(f(body)), nvm.Perm)
}

// Field changes a JSON state file's object, keeping it well formed and its
// checksum valid.
func Field(path string, change func(m map[string]any)) error {
	var ferr error
	err := Rewrite(path, func(body []byte) []byte {
		var m map[string]any
		if ferr = json.Unmarshal(body, &m); ferr != nil {
			return body
		}
		change(m)
		b, _ := json.Marshal(m)
		return b
	})
	if ferr != nil {
		return fmt.Errorf("%s is not a JSON object: %w", path, ferr)
	}
	return err
}

// Snapshot describes every entry of a directory tree, by path: its mode,
// and a regular file's bytes. Two snapshots are equal when nothing in the
// tree changed.
func Snapshot(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		s := fi.Mode().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			s += " " + string(b)
		}
		out[path] = s
		return nil
	})
	return out, err
}

// Diff lists the paths whose entries differ between two snapshots.
func Diff(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
