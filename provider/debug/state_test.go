package debug

import (
	"errors"
	"os"
	"testing"

	"senseboard/nvm"
	"senseboard/profile"
)

// FuzzState: debug.json with any contents (under a valid checksum) either
// loads settings that obey the rules a client's writes obey, and that are
// read back the same after they are written, or fails with a
// *nvm.CorruptError naming the file.
func FuzzState(f *testing.F) {
	f.Add([]byte(`{"SystemMessages":true,"DebugMessages":false,"MinimalLevel":2}`))
	f.Add([]byte(`{"MinimalLevel":9}`))
	f.Add([]byte(`{"SystemMessages":1}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{}{}`))
	dir := f.TempDir()
	p := profile.Default()
	p.Debug.Log.Enabled = false
	f.Fuzz(func(t *testing.T, body []byte) {
		store, err := nvm.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		path := store.Path(configFile)
		if err := os.WriteFile(path, nvm.Encode(body), nvm.Perm); err != nil {
			t.Fatal(err)
		}
		pr, err := New(store, nil, p)
		if err != nil {
			var ce *nvm.CorruptError
			if !errors.As(err, &ce) || ce.Path != path {
				t.Fatalf("error %v is not a CorruptError naming %s", err, path)
			}
			return
		}
		got := pr.cfg.Get()
		if err := got.check(); err != nil {
			t.Fatalf("loaded settings a client could not write: %+v: %v", got, err)
		}
		if err := pr.cfg.Update(func(*persisted) error { return nil }); err != nil {
			t.Fatal(err)
		}
		again, err := New(store, nil, p)
		if err != nil || again.cfg.Get() != got {
			t.Fatalf("written back and loaded again: %+v %v, want %+v", again.cfg.Get(), err, got)
		}
	})
}
