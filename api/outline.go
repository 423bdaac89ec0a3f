package api

import (
	"encoding/json"
	"sync"

	"github.com/go-openapi/spec"
)

// The outline of definitions: every resource with its operations, their
// parameters (path parameters first, then the body) and the schemas of
// responses and notifications.
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

// Outline renders the set in a compact JSON form for clients that build
// requests and forms from it (the bridge's dashboard): every resource with
// its operations, their parameters (path parameters first, then the body)
// and the schemas of responses and notifications. apps names the files
// that apps added, whose resources say so.
func (s *Set) Outline(apps map[string]bool) ([]byte, error) {
	out := []defResource{}
	for _, r := range s.Resources() {
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

// EmbeddedOutline renders the outline of the embedded definitions, once.
var EmbeddedOutline = sync.OnceValues(func() ([]byte, error) {
	set, err := Embedded()
	if err != nil {
		return nil, err
	}
	return set.Outline(nil)
})
