package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/go-openapi/spec"

	"senseboard/api"
	"senseboard/link"
	"senseboard/resource"
)

// The interface definitions in a form for the dashboard's forms: every
// resource with its operations, their parameters (path parameters first,
// then the body) and the schemas of responses and notifications.
type defResource struct {
	Path        string  `json:"path"`
	Group       string  `json:"group"`
	File        string  `json:"file"`
	App         bool    `json:"app,omitempty"` // a resource an app of the device added
	Description string  `json:"description,omitempty"`
	Ops         []defOp `json:"ops"`
}

type defOp struct {
	Op           string         `json:"op"`
	Description  string         `json:"description,omitempty"`
	Deprecated   bool           `json:"deprecated,omitempty"`
	Params       []defParam     `json:"params"`
	Response     *spec.Schema   `json:"response,omitempty"`
	Notification *spec.Schema   `json:"notification,omitempty"`
	Statuses     map[int]string `json:"statuses,omitempty"`
}

type defParam struct {
	Name        string       `json:"name"`
	In          string       `json:"in"`
	Required    bool         `json:"required"`
	Type        string       `json:"type"`
	Record      string       `json:"record,omitempty"`
	Format      string       `json:"format,omitempty"`
	Unit        string       `json:"unit,omitempty"`
	Enum        []any        `json:"enum,omitempty"`
	Minimum     *float64     `json:"minimum,omitempty"`
	Maximum     *float64     `json:"maximum,omitempty"`
	Description string       `json:"description,omitempty"`
	Schema      *spec.Schema `json:"schema,omitempty"`
}

// renderDefinitions renders a set of definitions for the dashboard; apps
// names the files that apps added.
func renderDefinitions(set *api.Set, apps map[string]bool) ([]byte, error) {
	out := []defResource{}
	for _, r := range set.Resources() {
		dr := defResource{Path: r.Path, Group: r.File.Title, File: r.File.Name, App: apps[r.File.Name],
			Description: r.Description, Ops: []defOp{}}
		for _, o := range r.Operations() {
			do := defOp{Op: o.Op.String(), Description: o.Description, Deprecated: o.Deprecated, Params: []defParam{},
				Response: o.Response, Notification: o.Notification, Statuses: o.Statuses}
			for _, p := range o.Params {
				do.Params = append(do.Params, defParam{Name: p.Name, In: p.In, Required: p.Required, Type: p.Type.String(),
					Record: p.Record, Format: p.Format, Unit: p.Unit, Enum: p.Enum, Minimum: p.Minimum, Maximum: p.Maximum,
					Description: p.Description, Schema: p.Schema})
			}
			dr.Ops = append(dr.Ops, do)
		}
		out = append(out, dr)
	}
	return json.Marshal(out)
}

// definitionsJSON renders the embedded definitions once.
var definitionsJSON = sync.OnceValues(func() ([]byte, error) {
	set, err := api.Embedded()
	if err != nil {
		return nil, err
	}
	return renderDefinitions(set, nil)
})

// definitions serves the built-in interface definitions.
func (s *Server) definitions(w http.ResponseWriter, r *http.Request) {
	b, err := definitionsJSON()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Cache-Control", "max-age=3600")
	writeJSON(w, http.StatusOK, b)
}

// deviceDefinitions serves the definitions of one device, its apps'
// resources included, as the device gives them over the radio link. It
// uses the device (and so connects to it when the bridge connects on
// demand).
func (s *Server) deviceDefinitions(w http.ResponseWriter, r *http.Request) {
	defs, err := s.Bridge.Definitions(r.Context(), r.PathValue("serial"))
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, defs)
}

// deviceDefs are a device's definitions as the bridge last learnt them.
type deviceDefs struct {
	key  string // the index they were built from
	set  *api.Set
	ops  *resource.Router
	json []byte
}

// Definitions returns the interface definitions of a device (as JSON, in
// the form of GET /api/definitions): its built-in files and those its apps
// added, asked of the device over the radio link.
func (b *Bridge) Definitions(ctx context.Context, serial string) ([]byte, error) {
	d, err := b.device(serial)
	if err != nil {
		return nil, err
	}
	c, done, err := d.use(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	defs, err := d.definitions(ctx, c)
	if err != nil {
		return nil, err
	}
	return defs.json, nil
}

// definitions asks the device for the index of its definitions and builds
// them, from the bridge's own files where the device has the same, and
// from files it asks the device for otherwise. No lock is held across the
// round trips.
func (d *device) definitions(ctx context.Context, c *link.Conn) (*deviceDefs, error) {
	ctx, cancel := context.WithTimeout(ctx, d.b.cfg.Timeout)
	defer cancel()
	idx, err := c.Definitions(ctx)
	if err != nil {
		return nil, fmt.Errorf("device %s: definitions: %w", d.serial, err)
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
	sameFirmware := idx.Builtin.Set == api.EmbeddedHash() // the device's built-in files are the bridge's
	for _, name := range idx.Builtin.Files {
		var f *api.File
		if sameFirmware {
			f = ownFile(own, name)
		}
		if f == nil {
			if f, err = fetchFile(ctx, c, fileID{name: name, set: idx.Builtin.Set}); err != nil {
				return nil, fmt.Errorf("device %s: definitions: %w", d.serial, err)
			}
		}
		if err := add(f); err != nil {
			return nil, err
		}
	}
	apps := map[string]bool{}
	for _, a := range idx.Apps {
		apps[a.Name] = true
		f, err := fetchFile(ctx, c, fileID{name: a.Name, sha256: a.SHA256})
		if err != nil {
			return nil, fmt.Errorf("device %s: definitions: %w", d.serial, err)
		}
		if err := add(f); err != nil {
			return nil, err
		}
	}
	js, err := renderDefinitions(set, apps)
	if err != nil {
		return nil, err
	}
	defs := &deviceDefs{key: key, set: set, ops: opsRouter(set), json: js}
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

// fetched keeps the files the bridge has asked devices for, parsed, by
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
func fetchFile(ctx context.Context, c definitionFiler, id fileID) (*api.File, error) {
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
		return nil, err
	}
	if id.sha256 != "" && df.SHA256 != id.sha256 {
		return nil, fmt.Errorf("file %s changed while the bridge read it; ask again", id.name)
	}
	f, err := api.Parse(id.name, []byte(df.YAML))
	if err != nil || !known {
		return f, err
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
func (d *device) operation(ctx context.Context, c *link.Conn, op resource.Op, path string) *api.Operation {
	d.mu.Lock()
	defs := d.defs
	d.mu.Unlock()
	if defs != nil {
		if o := lookup(defs.ops, op, path); o != nil {
			return o
		}
	}
	defs, err := d.definitions(ctx, c)
	if err != nil {
		d.b.cfg.Log.Info("definitions", "device", d.serial, "err", err)
		return nil
	}
	return lookup(defs.ops, op, path)
}
