package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/go-openapi/loads"
	"github.com/go-openapi/spec"
	"github.com/go-openapi/strfmt"
	"github.com/go-openapi/validate"

	"senseboard/resource"
)

// File is one loaded definition file.
type File struct {
	Name        string // file name, for messages
	Title       string
	Version     string
	Description string
	State       string // x-api-state
	Required    bool   // x-api-required
	Kind        string // x-api-type
	Module      string // x-module: the profile module that enables the file; "" when always present
	Resources   []*Resource
	Raw         []byte // the file as written
	swagger     *spec.Swagger
}

// Resource is one path of a definition file with its operations.
type Resource struct {
	Path        string // pattern, for example /Meas/Acc/{SampleRate}
	File        *File
	Subtree     bool     // x-subtree: also answers every path below Path
	PathParams  []*Param // in the order of the pattern
	Ops         [resource.NumOps]*Operation
	Description string
}

// Operations returns the resource's operations in Op order.
func (r *Resource) Operations() []*Operation {
	var ops []*Operation
	for _, o := range r.Ops {
		if o != nil {
			ops = append(ops, o)
		}
	}
	return ops
}

// Operation is one operation of a resource.
type Operation struct {
	Op          resource.Op
	Resource    *Resource
	Description string
	Deprecated  bool
	// Params are the path parameters in pattern order, then the operation's
	// own parameters in definition order: the order of a request's values.
	Params []*Param
	// Response is the schema of a 200 response's content; nil when none.
	Response *spec.Schema
	// Notification is the schema of a subscription's notifications.
	Notification *spec.Schema
	// Statuses are the documented response codes with their descriptions.
	Statuses map[int]string
}

// Param is a declared parameter.
type Param struct {
	Name        string
	In          string // path, query or body
	Required    bool
	Description string
	Type        resource.Type // declared type; TypeRecord for objects, TypeJSON for arrays
	Record      string        // record name of an object body given by $ref
	Format      string
	Unit        string
	Enum        []any
	Minimum     *float64
	Maximum     *float64
	MaxLength   *int64
	Pattern     string
	Schema      *spec.Schema // expanded body schema
	pattern     *regexp.Regexp
}

// Set is a set of loaded definition files without conflicts.
type Set struct {
	Files []*File
	paths map[string]*Resource
}

// Add adds a file, refusing a path/operation that another file defines.
func (s *Set) Add(f *File) error {
	if s.paths == nil {
		s.paths = make(map[string]*Resource)
	}
	for _, r := range f.Resources {
		key := strings.ToLower(r.Path)
		if o := s.paths[key]; o != nil {
			return fmt.Errorf("api/%s: path %s is already defined in %s", f.Name, r.Path, o.File.Name)
		}
	}
	for _, r := range f.Resources {
		s.paths[strings.ToLower(r.Path)] = r
	}
	s.Files = append(s.Files, f)
	return nil
}

// Resources returns every resource of the set in file order.
func (s *Set) Resources() []*Resource {
	var out []*Resource
	for _, f := range s.Files {
		out = append(out, f.Resources...)
	}
	return out
}

// Resource returns the resource with the pattern, or nil.
func (s *Set) Resource(pattern string) *Resource { return s.paths[strings.ToLower(pattern)] }

// Record returns the schema of a named definition from any file, or nil.
func (s *Set) Record(name string) *spec.Schema {
	for _, f := range s.Files {
		if d, ok := f.swagger.Definitions[name]; ok {
			return &d
		}
	}
	return nil
}

// Parse loads one definition file: it must be Swagger 2.0 that go-openapi
// validates against the Swagger 2.0 schema, and follow the conventions of the
// package comment.
func Parse(name string, data []byte) (*File, error) {
	f, err := parse(name, data, true)
	if err != nil {
		return nil, fmt.Errorf("api/%s: %w", name, err)
	}
	return f, nil
}

// parseEmbedded loads an embedded file without validating it against the
// Swagger 2.0 schema, which takes go-openapi about 70 ms a file: the embedded
// files cannot change after the build, and TestEmbeddedDefinitionsValidate
// holds every one of them to the full validation of Parse.
func parseEmbedded(name string, data []byte) (*File, error) {
	f, err := parse(name, data, false)
	if err != nil {
		return nil, fmt.Errorf("api/%s: %w", name, err)
	}
	return f, nil
}

// metaSchema is the Swagger 2.0 schema with its references expanded once:
// go-openapi would otherwise expand it again for every document it validates.
var metaSchema = sync.OnceValues(func() (*spec.Schema, error) {
	s, err := spec.Swagger20Schema()
	if err != nil {
		return nil, err
	}
	if err := spec.ExpandSchemaWithBasePath(s, nil, &spec.ExpandOptions{RelativeBase: s.ID}); err != nil {
		return nil, err
	}
	s.ID = ""
	return s, nil
})

// validateDocument validates a document against the Swagger 2.0 schema and
// the rules go-openapi adds (unique operation ids, resolvable references,
// path parameters declared, ...).
func validateDocument(doc *loads.Document) error {
	meta, err := metaSchema()
	if err != nil {
		return fmt.Errorf("load the Swagger 2.0 schema: %w", err)
	}
	errs, _ := validate.NewSpecValidator(meta, strfmt.Default).Validate(doc)
	if errs.HasErrors() {
		return fmt.Errorf("invalid: %s", oneLine(errors.Join(errs.Errors...)))
	}
	return nil
}

func parse(name string, data []byte, strict bool) (*File, error) {
	doc, err := loads.Analyzed(json.RawMessage(data), "2.0")
	if err != nil {
		return nil, fmt.Errorf("not a Swagger 2.0 document: %w", err)
	}
	if strict {
		if err := validateDocument(doc); err != nil {
			return nil, err
		}
	}
	orig := doc.Spec()
	expanded, err := doc.Expanded()
	if err != nil {
		return nil, fmt.Errorf("resolve references: %w", err)
	}
	sw := expanded.Spec()
	if orig.Info == nil {
		return nil, errors.New("no info section")
	}
	f := &File{
		Name:        name,
		Title:       orig.Info.Title,
		Version:     orig.Info.Version,
		Description: strings.TrimSpace(orig.Info.Description),
		Raw:         data,
		swagger:     sw,
	}
	for _, key := range []string{"x-api-state", "x-api-required", "x-api-type"} {
		if _, ok := orig.Info.Extensions[key]; !ok {
			return nil, fmt.Errorf("info lacks %s", key)
		}
	}
	f.State, _ = orig.Info.Extensions.GetString("x-api-state")
	f.Required, _ = orig.Info.Extensions.GetBool("x-api-required")
	f.Kind, _ = orig.Info.Extensions.GetString("x-api-type")
	f.Module, _ = orig.Info.Extensions.GetString("x-module")
	if sw.Paths == nil || len(sw.Paths.Paths) == 0 {
		return nil, errors.New("no paths")
	}

	keys := make([]string, 0, len(sw.Paths.Paths))
	for k := range sw.Paths.Paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	byPath := map[string]*Resource{}
	get := func(path string) *Resource {
		r := byPath[path]
		if r == nil {
			r = &Resource{Path: path, File: f}
			byPath[path] = r
			f.Resources = append(f.Resources, r)
		}
		return r
	}
	for _, key := range keys {
		item := sw.Paths.Paths[key]
		origItem := orig.Paths.Paths[key]
		base, isSub := strings.CutSuffix(key, "/"+resource.SubscriptionSegment)
		ops := map[string]*spec.Operation{"get": item.Get, "put": item.Put, "post": item.Post, "delete": item.Delete}
		origOps := map[string]*spec.Operation{"get": origItem.Get, "put": origItem.Put, "post": origItem.Post, "delete": origItem.Delete}
		for _, other := range []struct {
			name string
			op   *spec.Operation
		}{{"head", item.Head}, {"options", item.Options}, {"patch", item.Patch}} {
			if other.op != nil {
				return nil, fmt.Errorf("%s: operation %s is not part of the interface", key, other.name)
			}
		}
		if isSub {
			if item.Get != nil || item.Put != nil || item.Post == nil || item.Delete == nil {
				return nil, fmt.Errorf("%s: a subscription path has exactly post (subscribe) and delete (unsubscribe)", key)
			}
			if _, ok := item.Post.Responses.Extensions["x-notification"]; !ok {
				return nil, fmt.Errorf("%s: post lacks x-notification among its responses", key)
			}
		}
		r := get(base)
		if sub, _ := item.Extensions.GetBool("x-subtree"); sub {
			r.Subtree = true
		}
		pathParams, err := templateParams(base)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		for _, method := range []string{"get", "put", "post", "delete"} {
			so := ops[method]
			if so == nil {
				continue
			}
			op := resource.Op(0)
			switch {
			case isSub && method == "post":
				op = resource.Subscribe
			case isSub && method == "delete":
				op = resource.Unsubscribe
			default:
				op, _ = resource.ParseOp(method)
			}
			if r.Ops[op] != nil {
				return nil, fmt.Errorf("%s: %s defined twice", r.Path, op)
			}
			o, err := newOperation(sw, r, op, item.Parameters, so, origItem.Parameters, origOps[method], pathParams)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", strings.ToUpper(method), key, err)
			}
			r.Ops[op] = o
			if r.Description == "" {
				r.Description = strings.TrimSpace(so.Description)
			}
			if len(r.PathParams) == 0 {
				r.PathParams = o.Params[:len(pathParams)]
			}
		}
	}
	for _, r := range f.Resources {
		if len(r.Operations()) == 0 {
			return nil, fmt.Errorf("%s: no operations", r.Path)
		}
	}
	return f, nil
}

// templateParams returns the parameter names of a path template in order.
func templateParams(path string) ([]string, error) {
	var names []string
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			names = append(names, seg[1:len(seg)-1])
		} else if strings.ContainsAny(seg, "{}") {
			return nil, fmt.Errorf("segment %q: braces enclose a whole parameter segment", seg)
		}
	}
	return names, nil
}

func newOperation(sw *spec.Swagger, r *Resource, op resource.Op, itemParams []spec.Parameter, so *spec.Operation,
	origItemParams []spec.Parameter, origOp *spec.Operation, pathNames []string) (*Operation, error) {
	o := &Operation{
		Op:          op,
		Resource:    r,
		Description: strings.TrimSpace(so.Description),
		Deprecated:  so.Deprecated,
		Statuses:    map[int]string{},
	}
	// Operation parameters override path-item parameters of the same name and location.
	merged := mergeParams(itemParams, so.Parameters)
	origMerged := mergeParams(origItemParams, origOp.Parameters)
	byPath := map[string]*Param{}
	var rest []*Param
	for i, sp := range merged {
		p, err := newParam(sp, origMerged[i])
		if err != nil {
			return nil, err
		}
		if p.In == "path" {
			byPath[p.Name] = p
		} else {
			rest = append(rest, p)
		}
	}
	for _, name := range pathNames {
		p := byPath[name]
		if p == nil {
			return nil, fmt.Errorf("path parameter %s is not declared", name)
		}
		o.Params = append(o.Params, p)
		delete(byPath, name)
	}
	for name := range byPath {
		return nil, fmt.Errorf("path parameter %s is not in the path", name)
	}
	o.Params = append(o.Params, rest...)

	if so.Responses == nil {
		return nil, errors.New("no responses")
	}
	for code, resp := range so.Responses.StatusCodeResponses {
		o.Statuses[code] = strings.TrimSpace(resp.Description)
		if code == 200 && resp.Schema != nil {
			s := *resp.Schema
			o.Response = &s
		}
	}
	if raw, ok := so.Responses.Extensions["x-notification"]; ok {
		s, err := extensionSchema(sw, raw)
		if err != nil {
			return nil, fmt.Errorf("x-notification: %w", err)
		}
		o.Notification = s
	}
	return o, nil
}

func mergeParams(item, op []spec.Parameter) []spec.Parameter {
	out := slices.Clone(item)
	for _, p := range op {
		replaced := false
		for i, q := range out {
			if q.Name == p.Name && q.In == p.In {
				out[i], replaced = p, true
			}
		}
		if !replaced {
			out = append(out, p)
		}
	}
	return out
}

// extensionSchema decodes the schema of an extension such as x-notification
// and expands its references against the document.
func extensionSchema(sw *spec.Swagger, raw any) (*spec.Schema, error) {
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var wrapper struct {
		Schema *spec.Schema `json:"schema"`
	}
	if err := json.Unmarshal(b, &wrapper); err != nil {
		return nil, err
	}
	if wrapper.Schema == nil {
		return nil, errors.New("no schema")
	}
	if err := spec.ExpandSchema(wrapper.Schema, sw, nil); err != nil {
		return nil, err
	}
	return wrapper.Schema, nil
}

func newParam(sp, orig spec.Parameter) (*Param, error) {
	p := &Param{
		Name:        sp.Name,
		In:          sp.In,
		Required:    sp.Required,
		Description: strings.TrimSpace(sp.Description),
	}
	switch sp.In {
	case "path", "query":
		t, err := typeOf(sp.Type, sp.Format)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %w", sp.Name, err)
		}
		p.Type, p.Format = t, sp.Format
		p.Enum, p.Minimum, p.Maximum = sp.Enum, sp.Minimum, sp.Maximum
		p.MaxLength, p.Pattern = sp.MaxLength, sp.Pattern
		p.Unit, _ = sp.Extensions.GetString("x-unit")
	case "body":
		if sp.Schema == nil {
			return nil, fmt.Errorf("body parameter %s has no schema", sp.Name)
		}
		s := sp.Schema
		p.Schema = s
		if orig.Schema != nil && orig.Schema.Ref.String() != "" {
			ref := orig.Schema.Ref.String()
			p.Record = ref[strings.LastIndex(ref, "/")+1:]
		}
		switch {
		case s.Type.Contains("object") || len(s.Properties) > 0:
			p.Type = resource.TypeRecord
		case s.Type.Contains("array"):
			p.Type = resource.TypeJSON
		default:
			if len(s.Type) != 1 {
				return nil, fmt.Errorf("body parameter %s has no single type", sp.Name)
			}
			t, err := typeOf(s.Type[0], s.Format)
			if err != nil {
				return nil, fmt.Errorf("parameter %s: %w", sp.Name, err)
			}
			p.Type, p.Format = t, s.Format
			p.Enum, p.Minimum, p.Maximum = s.Enum, s.Minimum, s.Maximum
			p.MaxLength, p.Pattern = s.MaxLength, s.Pattern
			p.Unit, _ = s.Extensions.GetString("x-unit")
		}
	default:
		return nil, fmt.Errorf("parameter %s: location %q is not used by the interface (path, query or body)", sp.Name, sp.In)
	}
	if p.Pattern != "" {
		re, err := regexp.Compile(p.Pattern)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: pattern: %w", sp.Name, err)
		}
		p.pattern = re
	}
	return p, nil
}

// typeOf maps a Swagger type and format to a value type.
func typeOf(typ, format string) (resource.Type, error) {
	switch typ {
	case "integer":
		switch format {
		case "", "int64":
			return resource.TypeInt64, nil
		case "int32":
			return resource.TypeInt32, nil
		case "int16":
			return resource.TypeInt16, nil
		case "int8":
			return resource.TypeInt8, nil
		case "uint8":
			return resource.TypeUint8, nil
		case "uint16":
			return resource.TypeUint16, nil
		case "uint32":
			return resource.TypeUint32, nil
		case "uint64":
			return resource.TypeUint64, nil
		}
	case "number":
		switch format {
		case "float":
			return resource.TypeFloat32, nil
		case "", "double":
			return resource.TypeFloat64, nil
		}
	case "string":
		return resource.TypeString, nil
	case "boolean":
		return resource.TypeBool, nil
	}
	return 0, fmt.Errorf("type %q format %q is not supported", typ, format)
}

// TypeName returns how a caller names the parameter's type: the record name,
// or the primitive type name.
func (p *Param) TypeName() string {
	if p.Record != "" {
		return p.Record
	}
	return p.Type.String()
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}
