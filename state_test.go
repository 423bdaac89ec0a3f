package senseboard_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"senseboard"
	"senseboard/clock"
	"senseboard/internal/damage"
	"senseboard/internal/fsperm"
	"senseboard/nvm"
	"senseboard/resource"
)

// usedState returns a state directory that a device used: every state
// file exists, written by the device itself.
func usedState(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	d, err := senseboard.New(senseboard.Config{Profile: allModules(t), Clock: clock.NewVirtual(), Seed: 1, StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		op   resource.Op
		path string
		arg  resource.Value
	}{
		{resource.Put, "/Comm/Ble/Security/Pin", resource.String("123456")},
		{resource.Put, "/System/Debug/Log/Config", record(t, "DebugLogConfig", `{"MinimalLevel": 2}`)},
		{resource.Put, "/Mem/DataLogger/Config", record(t, "DataLoggerConfig", `{"dataEntries": {"dataEntry": [{"path": "/Meas/HR"}]}}`)},
		// One log, so that the Logbook's index exists too.
		{resource.Put, "/Mem/DataLogger/State", resource.Uint8(3)},
		{resource.Put, "/Mem/DataLogger/State", resource.Uint8(2)},
	} {
		if env, err := d.Call(c.op, c.path, c.arg); err != nil || env.Status != resource.StatusOK {
			t.Fatalf("%s %s: %v %+v", c.op, c.path, err, env)
		}
	}
	for chip := range 2 {
		if err := d.EEPROM.Write(chip, 100, []byte{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "logbook.json")); err != nil {
		t.Fatalf("a used state directory has the Logbook's index: %v", err)
	}
	return dir
}

// copyState copies a state directory, keeping the files and folders private.
func copyState(t *testing.T, dst, src string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dst, func(path string, e fs.DirEntry, err error) error {
		if err != nil || path == dst {
			return err
		}
		mode := nvm.Perm
		if e.IsDir() {
			mode = 0o700
		}
		return os.Chmod(path, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func record(t *testing.T, name, text string) resource.Value {
	v, err := resource.RecordJSON(name, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	s, err := damage.Snapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestNewOnDamagedState damages each state file of a used directory in
// each way a file can be damaged and starts a device on it: New refuses
// with an error that names the file, says what is wrong and what to do, on
// one line, and leaves the directory as it was.
//
// Unreadable files are files of mode 0 opened from a thread that lacks
// root's permission-override capabilities (internal/fsperm), so the case
// holds when the tests run as root.
func TestNewOnDamagedState(t *testing.T) {
	t.Parallel()
	chip := append(damage.Files(), damage.Kind{Name: "chip of the wrong size", Apply: func(p string) error {
		return damage.Rewrite(p, func(b []byte) []byte { return b[:1000] })
	}, Reason: "a chip has"})
	jsonFile := append(damage.Files(), damage.JSON()...)
	files := []struct {
		name  string
		kinds []damage.Kind
	}{
		{"eeprom0.bin", chip},
		{"eeprom1.bin", chip},
		{"ble.json", append(jsonFile[:len(jsonFile):len(jsonFile)],
			damage.OutOfRange("interval out of range", func(m map[string]any) { m["Adv"].(map[string]any)["Interval"] = 1 }, "Interval 1"),
			damage.OutOfRange("pass key out of range", func(m map[string]any) { m["PassKey"] = "12345x" }, "pass key"),
			damage.OutOfRange("policy out of range", func(m map[string]any) { m["Policy"] = 4 }, "policy 4"),
		)},
		{"debug.json", append(jsonFile[:len(jsonFile):len(jsonFile)],
			damage.OutOfRange("level out of range", func(m map[string]any) { m["MinimalLevel"] = 5 }, "MinimalLevel 5"),
		)},
		{"datalogger.json", append(jsonFile[:len(jsonFile):len(jsonFile)],
			damage.OutOfRange("too many paths", func(m map[string]any) {
				e := m["dataEntries"].(map[string]any)
				e["dataEntry"] = slices.Repeat(e["dataEntry"].([]any), 9)
			}, "9 paths"),
		)},
		// A corrupt logbook.json is rebuilt from the logs
		// (TestNewRebuildsACorruptLogbookIndex); one that cannot be read
		// stops the device like any other.
		{"logbook.json", []damage.Kind{damage.Directory(), damage.Unreadable()}},
		{nvm.SharedLockName, []damage.Kind{damage.Directory(), damage.Unreadable()}}, // in the parent directory
	}
	template := usedState(t)
	for _, f := range files {
		for _, k := range f.kinds {
			t.Run(f.name+"/"+k.Name, func(t *testing.T) {
				dir := t.TempDir()
				copyState(t, dir, template)
				path := filepath.Join(dir, f.name)
				if f.name == nvm.SharedLockName {
					path = filepath.Join(filepath.Dir(dir), f.name)
					if err := os.WriteFile(path, nil, nvm.Perm); err != nil {
						t.Fatal(err)
					}
				}
				if err := k.Apply(path); err != nil {
					t.Fatal(err)
				}
				before := snapshot(t, dir)
				var (
					d   *senseboard.Device
					err error
				)
				start := func() {
					d, err = senseboard.New(senseboard.Config{Profile: allModules(t), Clock: clock.NewVirtual(), Seed: 1, StateDir: dir})
				}
				if k.Unreadable {
					if ferr := fsperm.Enforced(start); ferr != nil {
						t.Skipf("cannot drop root's permission override: %v", ferr)
					}
				} else {
					start()
				}
				if err == nil {
					d.Close()
					t.Fatal("New started a device on damaged state")
				}
				msg := err.Error()
				t.Log(msg)
				var ce *nvm.CorruptError
				var ae *nvm.AccessError
				if !(errors.As(err, &ce) && ce.Path == path || errors.As(err, &ae) && ae.Path == path) {
					t.Errorf("error %T does not name %s as a state file: %v", err, path, err)
				}
				if !strings.Contains(msg, path) || !strings.Contains(msg, k.Reason) || strings.Contains(msg, "\n") {
					t.Errorf("error %q: want one line naming %s and %q", msg, path, k.Reason)
				}
				if _, fix, ok := strings.Cut(msg, "; "); !ok || !containsAny(fix, "restore", "delete", "move", "run senseboard as") {
					t.Errorf("error %q does not say what to do", msg)
				}
				if diff := damage.Diff(before, snapshot(t, dir)); len(diff) > 0 {
					t.Errorf("New changed the damaged directory: %v", diff)
				}
			})
		}
	}
}

// TestNewRebuildsACorruptLogbookIndex: a corrupt Logbook index
// (logbook.json), unlike the other state files, does not stop the device,
// as the logs give it again. The device starts with the logs listed and a
// warning that names the file, what is wrong and where the corrupt file
// is kept: beside it as logbook.json.corrupt, byte for byte. Nothing else
// of the directory changes.
func TestNewRebuildsACorruptLogbookIndex(t *testing.T) {
	t.Parallel()
	template := usedState(t)
	kinds := slices.DeleteFunc(append(damage.Files(), damage.JSON()...), func(k damage.Kind) bool {
		return k.Unreadable || k.Name == damage.Directory().Name // these stop it (TestNewOnDamagedState)
	})
	for _, k := range kinds {
		t.Run(k.Name, func(t *testing.T) {
			dir := t.TempDir()
			copyState(t, dir, template)
			index := filepath.Join(dir, "logbook.json")
			if err := k.Apply(index); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, dir)
			d, err := senseboard.New(senseboard.Config{Profile: allModules(t), Clock: clock.NewVirtual(), Seed: 1, StateDir: dir})
			if err != nil {
				t.Fatalf("a corrupt logbook.json stopped the device: %v", err)
			}
			defer d.Close()
			if es := d.Logbook.Storage().Entries(); len(es) != 1 || es[0].ID != 1 {
				t.Errorf("entries %+v; want the one log", es)
			}
			warnings := d.Logbook.Storage().Warnings()
			if len(warnings) != 1 || !strings.Contains(warnings[0], "logbook.json was corrupt") || !strings.Contains(warnings[0], k.Reason) ||
				!strings.Contains(warnings[0], "kept as logbook.json.corrupt ") {
				t.Errorf("warnings %q; want one naming logbook.json, %q and logbook.json.corrupt", warnings, k.Reason)
			}
			after := snapshot(t, dir)
			aside := index + ".corrupt"
			if after[aside] != before[index] {
				t.Errorf("%s is not the corrupt file as it was", aside)
			}
			if _, err := d.Logbook.Storage().Read(1); err != nil {
				t.Errorf("log 1: %v", err)
			}
			if diff := damage.Diff(before, after); !slices.Equal(diff, []string{index, aside}) {
				t.Errorf("changed: %v; want the index rebuilt and the corrupt one kept aside", diff)
			}
		})
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// TestKeyFilesArePrivate: ble.json, which holds the pass key and the bond's
// key, is readable only by its owner, also when it was not before.
func TestKeyFilesArePrivate(t *testing.T) {
	dir := usedState(t)
	path := filepath.Join(dir, "ble.json")
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := senseboard.New(senseboard.Config{Clock: clock.NewVirtual(), Seed: 1, StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("after start ble.json has mode %v", fi.Mode())
	}
	os.Chmod(path, 0o640)
	if env, err := d.Call(resource.Put, "/Comm/Ble/Security/Pin", resource.String("654321")); err != nil || env.Status != resource.StatusOK {
		t.Fatalf("PUT Pin: %v %+v", err, env)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("after a write ble.json has mode %v", fi.Mode())
	}
}
