package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"senseboard/resource"
)

// Index finds the definition of an operation on a device's path among the
// resources of a set, as the device's router would route it: path
// parameters and subtrees included.
type Index struct{ rt *resource.Router }

// NewIndex indexes the operations of a set.
func NewIndex(set *Set) *Index {
	rt := resource.NewRouter("")
	none := resource.HandlerFunc(func(*resource.Request) resource.Response { return resource.Response{} })
	for _, r := range set.Resources() {
		for _, o := range r.Operations() {
			var route *resource.Route
			var err error
			if r.Subtree {
				route, err = rt.HandleSubtree(r.Path, o.Op, none)
			} else {
				route, err = rt.Handle(r.Path, o.Op, none)
			}
			if err == nil {
				route.SetData(r)
			}
		}
	}
	return &Index{rt}
}

// Operation returns the definition of op on path, or nil when the set
// has none.
func (ix *Index) Operation(op resource.Op, path string) *Operation {
	m, err := ix.rt.Resolve(op, path)
	if err != nil || m.Route == nil {
		return nil
	}
	r, _ := m.Route.Data().(*Resource)
	if r == nil {
		return nil
	}
	return r.Ops[m.Op]
}

// Values reads a request's values from one JSON value, as a client that
// names no parameter sends them (the phone bridge's messages). For an
// operation with one body parameter, or for an operation that is not
// known (o nil), the value is that parameter. For an operation with
// several, the value is an object keyed by the parameter names, matched
// without regard to case, and the values go in the definition's order;
// optional parameters at the end may be left out. No value is no values.
func (o *Operation) Values(value json.RawMessage) ([]resource.Value, error) {
	if len(bytes.TrimSpace(value)) == 0 {
		return nil, nil
	}
	if o != nil {
		if body := o.Params[len(o.Resource.PathParams):]; len(body) > 1 {
			return o.namedValues(body, value)
		}
	}
	v, err := resource.JSON(value)
	if err != nil {
		return nil, err
	}
	return []resource.Value{v}, nil
}

// namedValues reads the object value of an operation with several
// parameters into the parameters' values, in the definition's order.
func (o *Operation) namedValues(want []*Param, value json.RawMessage) ([]resource.Value, error) {
	name := strings.ToUpper(o.Op.String()) + " " + o.Resource.Path
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(value, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("%s takes %d parameters: the value is an object %s; %s given",
			name, len(want), paramShape(want), clip(value))
	}
	vals := make([]json.RawMessage, len(want))
	for k, v := range fields {
		i := slices.IndexFunc(want, func(p *Param) bool { return strings.EqualFold(p.Name, k) })
		if i < 0 {
			return nil, fmt.Errorf("%s has no parameter %q; it takes %s", name, k, paramList(want))
		}
		if vals[i] != nil {
			return nil, fmt.Errorf("parameter %s is given twice (names match without regard to case); %s takes %s",
				want[i].Name, name, paramList(want))
		}
		vals[i] = v
	}
	n := len(want)
	for n > 0 && vals[n-1] == nil && !want[n-1].Required {
		n-- // optional parameters at the end may be left out
	}
	out := make([]resource.Value, n)
	for i, raw := range vals[:n] {
		if raw == nil {
			how := "it is required"
			if !want[i].Required {
				how = "it is optional, but a later parameter is given"
			}
			return nil, fmt.Errorf("missing parameter %s (%s); %s takes %s", want[i].Name, how, name, paramList(want))
		}
		v, err := resource.JSON(raw)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %v", want[i].Name, err)
		}
		out[i] = v
	}
	return out, nil
}

// paramList names parameters with their types: "Addr (uint32), Len (uint8)".
func paramList(ps []*Param) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Name + " (" + p.TypeName()
		if !p.Required {
			s[i] += ", optional"
		}
		s[i] += ")"
	}
	return strings.Join(s, ", ")
}

// paramShape is the object a value of parameters takes: {"Addr": ..., "Len": ...}.
func paramShape(ps []*Param) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Quote(p.Name) + ": ..."
	}
	return "{" + strings.Join(s, ", ") + "}"
}

// clip cuts a value to show in an error.
func clip(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "..."
	}
	return string(b)
}

// EmbeddedIndex indexes the embedded definitions, once; it is empty when
// they do not load.
var EmbeddedIndex = sync.OnceValue(func() *Index {
	set, err := Embedded()
	if err != nil {
		return NewIndex(&Set{})
	}
	return NewIndex(set)
})
