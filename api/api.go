// Package api owns the device's interface definitions: the Swagger 2.0 files
// of every resource group, embedded in the binary, and the code that loads
// them, binds request parameters to their declared types and checks content
// against the declared schemas.
//
// The files follow the form of the specification: sections swagger, info,
// paths and definitions; info with x-api-state, x-api-required and x-api-type;
// a subscribable resource X is the path X/Subscription with post (subscribe,
// with an x-notification schema among its responses) and delete (unsubscribe).
// Two extensions are senseboard's own: x-module on info names the profile
// module that enables the file (files without it are always present), and
// x-subtree on a path makes it answer every path below it as well.
package api

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"sync"
)

//go:embed *.yaml
var files embed.FS

// Files returns the embedded definition files by name, for serving them.
func Files() fs.FS { return files }

// Load loads every embedded definition file. A file that does not load is an
// error naming the file and the problem.
func Load() (*Set, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return LoadFiles(names...)
}

var embedded struct {
	once sync.Once
	set  *Set
	err  error
}

// Embedded returns the embedded definitions, loaded once per process. The
// set is shared: do not add to it.
func Embedded() (*Set, error) {
	embedded.once.Do(func() { embedded.set, embedded.err = Load() })
	return embedded.set, embedded.err
}

// LoadFiles loads the named embedded definition files, for devices and tests
// that serve a part of the interface.
func LoadFiles(names ...string) (*Set, error) {
	set := &Set{}
	for _, name := range names {
		data, err := files.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("api/%s: %w", name, err)
		}
		f, err := parseEmbedded(name, data)
		if err != nil {
			return nil, err
		}
		if err := set.Add(f); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// EmbeddedHash identifies the embedded definition files as a set, as the
// radio link's definitions index does (SetHash): two
// programs with the same hash have the same built-in files.
var EmbeddedHash = sync.OnceValue(func() string {
	names, _ := fs.Glob(files, "*.yaml")
	texts := make(map[string][]byte, len(names))
	for _, n := range names {
		texts[n], _ = files.ReadFile(n)
	}
	return SetHash(texts)
})

// IsEmbedded reports whether f is an embedded definition file as it is
// embedded: not an app's file, nor a file of another firmware.
func IsEmbedded(f *File) bool {
	b, err := files.ReadFile(f.Name)
	return err == nil && bytes.Equal(b, f.Raw)
}
