package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"senseboard/api"
	"senseboard/client"
	"senseboard/link"
	"senseboard/resource"
)

// Message is a client's message to the bridge: the operation (type), the
// resource's path and the body value (JSON; records as objects). A path of
// the form /net/<serial>/<path> names the device; otherwise Device does,
// or, when it is empty, the one connected device. ID tags the answer and,
// for a subscription, its notifications.
type Message struct {
	Type   string          `json:"type"`
	Path   string          `json:"path,omitempty"`
	Value  json.RawMessage `json:"value,omitempty"`
	ID     ID              `json:"id,omitempty"`
	Device string          `json:"device,omitempty"`
}

// ID is a message id: a JSON string or number, kept as text.
type ID string

// UnmarshalJSON reads a string or a number.
func (id *ID) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*id = ID(s)
		return nil
	}
	if _, err := strconv.ParseFloat(string(b), 64); err != nil {
		return fmt.Errorf("id %s: a string or a number", clip(b))
	}
	*id = ID(b)
	return nil
}

// Errors of messages; the HTTP server answers them with 400, 404 and 409.
var (
	ErrBadMessage   = errors.New("bad message")
	ErrNotConnected = errors.New("not connected")
)

// MaxMessage bounds a client's message.
const MaxMessage = 64 * 1024

// ParseMessage reads a message and checks its type and path.
func ParseMessage(data []byte) (Message, error) {
	var m Message
	if len(data) > MaxMessage {
		return m, fmt.Errorf("%w: %d bytes; a message has at most %d", ErrBadMessage, len(data), MaxMessage)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%w: not a JSON message %s (%v); a message is {\"type\": \"get\", \"path\": \"/Info\", \"value\": ..., \"id\": ..., \"device\": ...}",
			ErrBadMessage, clip(data), strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return m, fmt.Errorf("%w: more after the message's JSON object; send one message at a time", ErrBadMessage)
	}
	if _, err := m.op(); err != nil {
		return m, err
	}
	if m.Path == "" && !(strings.EqualFold(m.Type, "unsubscribe") && m.ID != "") {
		return m, fmt.Errorf("%w: %s message without a path", ErrBadMessage, orEmpty(m.Type))
	}
	return m, nil
}

func orEmpty(s string) string {
	if s == "" {
		return `a`
	}
	return strconv.Quote(s)
}

func clip(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "..."
	}
	return string(b)
}

// op reads the message's type.
func (m *Message) op() (resource.Op, error) {
	switch strings.ToLower(m.Type) {
	case "get":
		return resource.Get, nil
	case "put":
		return resource.Put, nil
	case "post":
		return resource.Post, nil
	case "delete":
		return resource.Delete, nil
	case "subscribe":
		return resource.Subscribe, nil
	case "unsubscribe":
		return resource.Unsubscribe, nil
	case "":
		return 0, fmt.Errorf("%w: no type; a message's type is get, put, post, delete, subscribe or unsubscribe", ErrBadMessage)
	}
	return 0, fmt.Errorf("%w: unknown type %q; a message's type is get, put, post, delete, subscribe or unsubscribe", ErrBadMessage, m.Type)
}

// params returns the message's value as the request's values. For an
// operation with one body parameter, or one the bridge has no definition
// of (o nil), the value is that parameter. For an operation with several,
// the value is an object keyed by the parameter names of the definition,
// matched without regard to case, and the values go in the definition's
// order.
func (m *Message) params(o *api.Operation) ([]resource.Value, error) {
	if len(bytes.TrimSpace(m.Value)) == 0 {
		return nil, nil
	}
	if o != nil {
		if body := o.Params[len(o.Resource.PathParams):]; len(body) > 1 {
			return namedParams(o, body, m.Value)
		}
	}
	v, err := resource.JSON(m.Value)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	return []resource.Value{v}, nil
}

// paramsOf returns the message's values for op on path of device d: by
// the bridge's own definitions, or, for a path they do not have (a
// resource an app added), by the device's, which it asks the device for
// once the device is connected (c). With c nil it returns ok false for
// such a path, to be asked again once the device is connected.
func (m *Message) paramsOf(ctx context.Context, d *device, c *link.Conn, op resource.Op, path string) (params []resource.Value, ok bool, err error) {
	o := operationOf(op, path)
	if o == nil && len(bytes.TrimSpace(m.Value)) > 0 {
		if c == nil {
			return nil, false, nil
		}
		o = d.operation(ctx, c, op, path)
	}
	params, err = m.params(o)
	return params, err == nil, err
}

// useFor takes device d into use (d.use) for the message's op on path and
// returns its connection with the message's values. Values the bridge's
// own definitions judge are judged before the device is used, so a bad
// message connects to nothing; those of a path only the device defines
// are judged once it is connected.
func (m *Message) useFor(ctx context.Context, d *device, op resource.Op, path string) (c *link.Conn, params []resource.Value, done func(), err error) {
	params, ok, err := m.paramsOf(ctx, d, nil, op, path)
	if err != nil {
		return nil, nil, nil, err
	}
	if c, done, err = d.use(ctx); err != nil {
		return nil, nil, nil, err
	}
	if !ok {
		if params, _, err = m.paramsOf(ctx, d, c, op, path); err != nil {
			done()
			return nil, nil, nil, err
		}
	}
	return c, params, done, nil
}

// namedParams reads the object value of an operation with several
// parameters into the parameters' values, in the definition's order.
func namedParams(o *api.Operation, want []*api.Param, value json.RawMessage) ([]resource.Value, error) {
	name := strings.ToUpper(o.Op.String()) + " " + o.Resource.Path
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(value, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("%w: %s takes %d parameters: the value is an object %s; %s given",
			ErrBadMessage, name, len(want), paramShape(want), clip(value))
	}
	vals := make([]json.RawMessage, len(want))
	for k, v := range fields {
		i := slices.IndexFunc(want, func(p *api.Param) bool { return strings.EqualFold(p.Name, k) })
		if i < 0 {
			return nil, fmt.Errorf("%w: %s has no parameter %q; it takes %s", ErrBadMessage, name, k, paramList(want))
		}
		if vals[i] != nil {
			return nil, fmt.Errorf("%w: parameter %s is given twice (names match without regard to case); %s takes %s",
				ErrBadMessage, want[i].Name, name, paramList(want))
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
			return nil, fmt.Errorf("%w: missing parameter %s (%s); %s takes %s",
				ErrBadMessage, want[i].Name, how, name, paramList(want))
		}
		v, err := resource.JSON(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: parameter %s: %v", ErrBadMessage, want[i].Name, err)
		}
		out[i] = v
	}
	return out, nil
}

// paramList names parameters with their types: "Addr (uint32), Len (uint8)".
func paramList(ps []*api.Param) string {
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
func paramShape(ps []*api.Param) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Quote(p.Name) + ": ..."
	}
	return "{" + strings.Join(s, ", ") + "}"
}

// opsRouter finds the definition of an operation on a path in a set.
func opsRouter(set *api.Set) *resource.Router {
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
	return rt
}

// definedOps finds the bridge's definition of an operation on a path.
var definedOps = sync.OnceValue(func() *resource.Router {
	set, err := api.Embedded()
	if err != nil {
		return resource.NewRouter("")
	}
	return opsRouter(set)
})

// operationOf returns the bridge's own definition of op on a device's
// path, or nil for a path it has no definition of (resources that apps add).
func operationOf(op resource.Op, path string) *api.Operation { return lookup(definedOps(), op, path) }

// lookup returns the definition of op on path in rt, or nil.
func lookup(rt *resource.Router, op resource.Op, path string) *api.Operation {
	m, err := rt.Resolve(op, path)
	if err != nil || m.Route == nil {
		return nil
	}
	r, _ := m.Route.Data().(*api.Resource)
	if r == nil {
		return nil
	}
	return r.Ops[m.Op]
}

// route finds the device a message is for and the path on it.
func (b *Bridge) route(m *Message) (*device, string, error) {
	path := m.Path
	serial := m.Device
	if rest, ok := cutFold(strings.TrimPrefix(path, "/"), "net/"); ok {
		s, p, _ := strings.Cut(rest, "/")
		if serial != "" && serial != s {
			return nil, "", fmt.Errorf("%w: the path names device %s and device says %s", ErrBadMessage, s, serial)
		}
		serial, path = s, "/"+p
	}
	if serial != "" {
		d, err := b.device(serial)
		return d, path, err
	}
	var connected, all []string
	for _, s := range b.Devices() {
		all = append(all, s.Serial)
		if s.Connected {
			connected = append(connected, s.Serial)
		}
	}
	switch {
	case len(connected) == 1:
		d, err := b.device(connected[0])
		return d, path, err
	case len(connected) > 1:
		return nil, "", fmt.Errorf("%w: several devices are connected (%s); name one with \"device\" or a path /net/<serial>/...",
			ErrBadMessage, joinSerials(connected))
	case len(all) == 0:
		return nil, "", fmt.Errorf("%w: the bridge sees no devices", ErrUnknownDevice)
	case len(all) == 1 && !b.cfg.Manual && !b.cfg.ConnectAll:
		d, err := b.device(all[0]) // the one device there is: connect on demand
		return d, path, err
	case len(all) > 1 && !b.cfg.Manual && !b.cfg.ConnectAll:
		return nil, "", fmt.Errorf("%w: no device is connected and the bridge sees several (%s); name one with \"device\" or a path /net/<serial>/...",
			ErrBadMessage, joinSerials(all))
	}
	return nil, "", fmt.Errorf("%w: no device is connected; the bridge sees %s", ErrNotConnected, joinSerials(all))
}

// cutFold is strings.CutPrefix ignoring case.
func cutFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// Answer is a device's answer to a message.
type Answer struct {
	Device   string
	Envelope *client.Envelope
}

// Do carries out a get, put, post or delete message.
func (b *Bridge) Do(ctx context.Context, m Message) (*Answer, error) {
	op, err := m.op()
	if err != nil {
		return nil, err
	}
	if op == resource.Subscribe || op == resource.Unsubscribe {
		return nil, fmt.Errorf("%w: a subscription needs a stream: use the WebSocket /api/ws or the text stream /api/output", ErrBadMessage)
	}
	d, path, err := b.route(&m)
	if err != nil {
		return nil, err
	}
	c, params, done, err := m.useFor(ctx, d, op, path)
	if err != nil {
		return nil, err
	}
	defer done()
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	env, err := c.Do(ctx, op, path, params...)
	if err != nil {
		return nil, deviceError(d, err)
	}
	return &Answer{Device: d.serial, Envelope: env}, nil
}

// deviceError words an error of a device's link: the device's own words,
// or what happened to the link.
func deviceError(d *device, err error) error {
	var re *client.RemoteError
	if errors.As(err, &re) {
		return fmt.Errorf("device %s: %w", d.serial, re)
	}
	return err
}

// localEnvelope is an answer of the bridge in the envelope's form, for a
// subscription it shares with other clients.
func localEnvelope(op resource.Op, uri string) *client.Envelope {
	e := resource.Envelope{Status: resource.StatusOK, Op: op, URI: uri}
	raw, _ := e.AppendJSON(nil)
	env := &client.Envelope{}
	json.Unmarshal(raw, env)
	env.Raw = raw
	return env
}
