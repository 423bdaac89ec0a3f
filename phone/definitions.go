package phone

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"senseboard/api"
	"senseboard/link"
	"senseboard/resource"
)

// Definitions are a device's interface definitions as the phone learnt
// them over the radio link: its built-in files and those its apps added.
type Definitions struct {
	// Set holds the files.
	Set *api.Set
	// Apps names the files that apps added.
	Apps map[string]bool
	// Index finds an operation among them.
	Index *api.Index

	key string // the device's index they were built from
}

// Definitions returns the interface definitions of a device, asked of
// the device over the radio link; it uses the device (and so connects to
// it when the phone connects on demand).
func (ph *Phone) Definitions(ctx context.Context, serial string) (*Definitions, error) {
	u, err := ph.Use(ctx, serial)
	if err != nil {
		return nil, err
	}
	defer u.Done()
	return u.d.definitions(ctx, u.c)
}

// definitions asks the device for the index of its definitions and builds
// them, from the phone's own files where the device has the same, and
// from files it asks the device for otherwise. No lock is held across the
// round trips.
func (d *peer) definitions(ctx context.Context, c *link.Conn) (*Definitions, error) {
	ctx, cancel := context.WithTimeout(ctx, d.ph.cfg.Timeout)
	defer cancel()
	idx, err := c.Definitions(ctx)
	if err != nil {
		return nil, err // the link names the device
	}
	key := indexKey(idx)
	d.mu.Lock()
	cur := d.defs
	d.mu.Unlock()
	if cur != nil && cur.key == key {
		return cur, nil
	}
	own, err := api.Embedded()
	if err != nil {
		return nil, err
	}
	set := &api.Set{}
	add := func(f *api.File) error {
		if err := set.Add(f); err != nil {
			return fmt.Errorf("device %s: definitions: %w", d.serial, err)
		}
		return nil
	}
	sameFirmware := idx.Builtin.Set == api.EmbeddedHash() // the device's built-in files are the phone's
	for _, name := range idx.Builtin.Files {
		var f *api.File
		if sameFirmware {
			f = ownFile(own, name)
		}
		if f == nil {
			if f, err = d.fetchFile(ctx, c, fileID{name: name, set: idx.Builtin.Set}); err != nil {
				return nil, err
			}
		}
		if err := add(f); err != nil {
			return nil, err
		}
	}
	apps := map[string]bool{}
	for _, a := range idx.Apps {
		apps[a.Name] = true
		f, err := d.fetchFile(ctx, c, fileID{name: a.Name, sha256: a.SHA256})
		if err != nil {
			return nil, err
		}
		if err := add(f); err != nil {
			return nil, err
		}
	}
	defs := &Definitions{Set: set, Apps: apps, Index: api.NewIndex(set), key: key}
	d.mu.Lock()
	d.defs = defs
	d.mu.Unlock()
	return defs, nil
}

// indexKey identifies an index: equal keys, equal definitions.
func indexKey(idx link.DefinitionsMsg) string {
	var sb strings.Builder
	sb.WriteString(idx.Builtin.Set)
	for _, n := range idx.Builtin.Files {
		sb.WriteString("\n" + n)
	}
	for _, a := range idx.Apps {
		sb.WriteString("\n" + a.Name + " " + a.SHA256)
	}
	return sb.String()
}

func ownFile(set *api.Set, name string) *api.File {
	for _, f := range set.Files {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// fileID identifies the text of a definition file a device has: a file an
// app added by its SHA-256 from the index, a built-in file by the hash of
// its firmware's whole set (which covers every file's name and text).
type fileID struct {
	name   string
	sha256 string // of an app's file
	set    string // of a built-in file: its firmware's set
}

// fetched keeps the files the phone has asked devices for, parsed, by
// fileID, so that a file is fetched and parsed (which validates it, some
// 70 ms) once however many devices or connections have it.
var fetched struct {
	mu    sync.Mutex
	files map[fileID]*api.File
}

// maxFetched bounds the files kept; the cache starts afresh beyond it.
const maxFetched = 256

// definitionFiler gives a device's definition files: a *link.Conn.
type definitionFiler interface {
	DefinitionFile(ctx context.Context, name string) (link.DefinitionFile, error)
}

// fetchFile returns the definition file id from those fetched before, or
// asks the device for it and parses it. A file whose hash differs from the
// one its app's index gave is refused.
func (d *peer) fetchFile(ctx context.Context, c definitionFiler, id fileID) (*api.File, error) {
	known := id.sha256 != "" || id.set != ""
	if known {
		fetched.mu.Lock()
		f := fetched.files[id]
		fetched.mu.Unlock()
		if f != nil {
			return f, nil
		}
	}
	df, err := c.DefinitionFile(ctx, id.name)
	if err != nil {
		return nil, err // the link names the device
	}
	if id.sha256 != "" && df.SHA256 != id.sha256 {
		return nil, fmt.Errorf("device %s: definitions: file %s changed while the bridge read it; ask again", d.serial, id.name)
	}
	f, err := api.Parse(id.name, []byte(df.YAML))
	if err != nil {
		return nil, fmt.Errorf("device %s: definitions: %w", d.serial, err)
	}
	if !known {
		return f, nil
	}
	fetched.mu.Lock()
	if fetched.files == nil || len(fetched.files) >= maxFetched {
		fetched.files = map[fileID]*api.File{}
	}
	fetched.files[id] = f
	fetched.mu.Unlock()
	return f, nil
}

// operation finds the definition of op on a path of the device among its
// own definitions, learning them again when they do not have it (an app
// may have added it since); nil when the device has none, or cannot say.
func (d *peer) operation(ctx context.Context, c *link.Conn, op resource.Op, path string) *api.Operation {
	d.mu.Lock()
	defs := d.defs
	d.mu.Unlock()
	if defs != nil {
		if o := defs.Index.Operation(op, path); o != nil {
			return o
		}
	}
	defs, err := d.definitions(ctx, c)
	if err != nil {
		d.ph.cfg.Log.Info("definitions", "device", d.serial, "err", err)
		return nil
	}
	return defs.Index.Operation(op, path)
}
