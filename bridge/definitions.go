package bridge

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/go-openapi/spec"

	"senseboard/api"
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
	defs, err := s.Phone.Definitions(r.Context(), r.PathValue("serial"))
	var b []byte
	if err == nil {
		b, err = renderDefinitions(defs.Set, defs.Apps)
	}
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, b)
}
