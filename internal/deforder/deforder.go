// Package deforder is a test helper: the order in which the device's
// definition files (package api) list a record's properties, which is the
// order of the record's fields in its binary form (GSP, the data
// logger's logs) unless docs/gsp.md names an exception. The parsed
// definitions lose that order; this package reads the files as written.
package deforder

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"go.yaml.in/yaml/v3"

	"senseboard/api"
)

// Property is one property of a definition.
type Property struct {
	Name string
	// Ref is the definition that the property, or each of its array's
	// items, refers to within the same file; "" for a scalar.
	Ref string
}

// Of returns the properties of the definition named def, in the order its
// file lists them, and the file's name. A name that several files define
// alike (FloatVector3D) is read from the first.
func Of(def string) (props []Property, file string, err error) {
	err = each(func(name string, root *yaml.Node) bool {
		d := child(child(root, "definitions"), def)
		if d == nil {
			return false
		}
		props, file = properties(d), name
		return true
	})
	if err == nil && file == "" {
		err = fmt.Errorf("no definition file defines %s", def)
	}
	return props, file, err
}

// Names returns the names of props.
func Names(props []Property) []string {
	out := make([]string, len(props))
	for i, p := range props {
		out[i] = p.Name
	}
	return out
}

// Response returns the definition of the content of a resource's GET
// (notification false) or of its notifications (true), as the file that
// defines the path refers to it; "" when the content is a scalar or the
// path has no such operation.
func Response(path string, notification bool) (string, error) {
	var def string
	found := false
	err := each(func(_ string, root *yaml.Node) bool {
		paths := child(root, "paths")
		var schema *yaml.Node
		if notification {
			schema = child(child(child(child(paths, path+"/Subscription"), "post"), "responses"), "x-notification")
		} else {
			schema = child(child(child(child(paths, path), "get"), "responses"), "200")
		}
		if schema == nil {
			return false
		}
		found = true
		def = ref(child(schema, "schema"))
		return true
	})
	if err == nil && !found {
		err = fmt.Errorf("no definition file defines %s of %s", map[bool]string{false: "GET", true: "notifications"}[notification], path)
	}
	return def, err
}

// each calls f with every definition file until it returns true.
func each(f func(name string, root *yaml.Node) bool) error {
	files, err := fs.Glob(api.Files(), "*.yaml")
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return errors.New("no definition files")
	}
	for _, name := range files {
		data, err := fs.ReadFile(api.Files(), name)
		if err != nil {
			return err
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if len(doc.Content) > 0 && f(name, doc.Content[0]) {
			return nil
		}
	}
	return nil
}

// properties returns a definition's properties in file order.
func properties(def *yaml.Node) []Property {
	ps := child(def, "properties")
	if ps == nil {
		return nil
	}
	var out []Property
	for i := 0; i+1 < len(ps.Content); i += 2 {
		p := ps.Content[i+1]
		r := ref(p)
		if r == "" {
			r = ref(child(p, "items"))
		}
		out = append(out, Property{Name: ps.Content[i].Value, Ref: r})
	}
	return out
}

// ref returns the local definition a schema refers to, or "".
func ref(schema *yaml.Node) string {
	r := child(schema, "$ref")
	if r == nil {
		return ""
	}
	_, name, _ := strings.Cut(r.Value, "#/definitions/")
	return name
}

// child returns the value of key in the mapping n, or nil.
func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
