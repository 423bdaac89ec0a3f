// Package nvmtest checks, in fuzz tests, how a package loads its state
// files of package nvm.
package nvmtest

import (
	"errors"
	"os"
	"reflect"
	"testing"

	"senseboard/nvm"
)

// FuzzVar fuzzes the loading of the state file name with open: with any
// contents (under a valid checksum) open either fails with a
// *nvm.CorruptError naming the file, or gives a value that check accepts
// (the rules of the values a client can write) and that is read back the
// same after it is written. seeds are contents to start from.
func FuzzVar[T any](f *testing.F, name string, open func(*nvm.Store) (*nvm.Var[T], error), check func(T) error, seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body []byte) {
		store, err := nvm.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		path := store.Path(name)
		if err := os.WriteFile(path, nvm.Encode(body), nvm.Perm); err != nil {
			t.Fatal(err)
		}
		v, err := open(store)
		if err != nil {
			var ce *nvm.CorruptError
			if !errors.As(err, &ce) || ce.Path != path {
				t.Fatalf("error %v is not a CorruptError naming %s", err, path)
			}
			return
		}
		got := v.Get()
		if err := check(got); err != nil {
			t.Fatalf("loaded %s a client could not write: %+v: %v", name, got, err)
		}
		if err := v.Update(func(*T) error { return nil }); err != nil {
			t.Fatal(err)
		}
		again, err := open(store)
		if err != nil {
			t.Fatalf("%s written back does not load: %v", name, err)
		}
		if !reflect.DeepEqual(again.Get(), got) {
			t.Fatalf("%s written back and loaded again: %+v, want %+v", name, again.Get(), got)
		}
	})
}
