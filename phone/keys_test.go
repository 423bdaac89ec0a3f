package phone

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"senseboard/internal/damage"
	"senseboard/internal/fsperm"
	"senseboard/nvm"
	"senseboard/nvm/nvmtest"
)

const testKey = "00112233445566778899aabbccddeeff"

// keysState returns a bridge state directory holding one bond's key.
func keysState(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ph, err := New(Config{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := ph.setKey("C0:53:42:00:00:07", testKey); err != nil {
		t.Fatal(err)
	}
	ph.Close()
	return dir
}

// TestStateFilesDamaged: a damaged keys.json or central.json stops the
// bridge with an error that names the file and says what to do, and the
// directory stays as it was. Unreadable files are files of mode 0 opened
// from a thread without root's permission override (internal/fsperm).
func TestStateFilesDamaged(t *testing.T) {
	template := keysState(t)
	kinds := damage.Files()
	for _, k := range damage.JSON() {
		if k.Name != "unknown field" { // keys.json is a map: any name is a device's address
			kinds = append(kinds, k)
		}
	}
	files := []struct {
		name  string
		kinds []damage.Kind
	}{
		{keysFile, append(kinds[:len(kinds):len(kinds)],
			damage.OutOfRange("address out of range", func(m map[string]any) { m["c0-53"] = testKey }, `device address "c0-53"`),
			damage.OutOfRange("key out of range", func(m map[string]any) { m["C0:53:42:00:00:07"] = "short" }, "not a 128-bit key"),
			damage.OutOfRange("key of another type", func(m map[string]any) { m["C0:53:42:00:00:07"] = 7 }, "do not decode"),
		)},
		{centralFile, append(kinds[:len(kinds):len(kinds)],
			damage.JSON()[1], // unknown field
			damage.OutOfRange("address out of range", func(m map[string]any) { m["address"] = "c0-53" }, `central address "c0-53"`),
		)},
	}
	for _, f := range files {
		for _, k := range f.kinds {
			t.Run(f.name+"/"+k.Name, func(t *testing.T) {
				dir := t.TempDir()
				if err := os.CopyFS(dir, os.DirFS(template)); err != nil {
					t.Fatal(err)
				}
				entries, _ := os.ReadDir(dir)
				for _, e := range entries {
					os.Chmod(filepath.Join(dir, e.Name()), nvm.Perm)
				}
				path := filepath.Join(dir, f.name)
				if err := k.Apply(path); err != nil {
					t.Fatal(err)
				}
				before, _ := damage.Snapshot(dir)
				var err error
				start := func() {
					var ph *Phone
					if ph, err = New(Config{StateDir: dir}); err == nil {
						ph.Close()
					}
				}
				if k.Unreadable {
					if ferr := fsperm.Enforced(start); ferr != nil {
						t.Skipf("cannot drop root's permission override: %v", ferr)
					}
				} else {
					start()
				}
				var ce *nvm.CorruptError
				var ae *nvm.AccessError
				if !(errors.As(err, &ce) && ce.Path == path || errors.As(err, &ae) && ae.Path == path) ||
					!strings.Contains(err.Error(), k.Reason) || strings.Contains(err.Error(), "\n") {
					t.Errorf("New = %v, want one line naming %s and %q", err, path, k.Reason)
				}
				if after, _ := damage.Snapshot(dir); len(damage.Diff(before, after)) > 0 {
					t.Errorf("New changed %v", damage.Diff(before, after))
				}
			})
		}
	}
}

// TestKeysFileIsPrivate: keys.json is readable only by its owner, also
// when it was not before, and after every write.
func TestKeysFileIsPrivate(t *testing.T) {
	dir := keysState(t)
	path := filepath.Join(dir, keysFile)
	os.Chmod(path, 0o644)
	ph, err := New(Config{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer ph.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("after start keys.json has mode %v", fi.Mode())
	}
	if k, ok := ph.key("C0:53:42:00:00:07"); !ok || k != testKey {
		t.Errorf("the key read back as %q %v", k, ok)
	}
	os.Chmod(path, 0o664)
	if err := ph.setKey("C0:53:42:00:00:08", testKey); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("after a write keys.json has mode %v", fi.Mode())
	}
	if err := ph.setKey("C0:53:42:00:00:09", "not a key"); err == nil {
		t.Error("a malformed key was kept")
	}
	if _, ok := ph.key("C0:53:42:00:00:09"); ok {
		t.Error("a refused key is in memory")
	}
}

// FuzzKeys: keys.json with any contents (under a valid checksum) either
// loads keys that obey the rules of a bond's keys, and that are read back
// the same after they are written, or fails with a *nvm.CorruptError
// naming the file.
func FuzzKeys(f *testing.F) {
	nvmtest.FuzzVar(f, keysFile, openKeys, func(k bondKeys) error { return k.check() },
		[]byte(`{"C0:53:42:00:00:07":"00112233445566778899aabbccddeeff"}`),
		[]byte(`{}`),
		[]byte(`{"c0:53":"00"}`),
		[]byte(`[]`))
}
