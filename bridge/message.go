package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"senseboard/api"
	"senseboard/client"
	"senseboard/phone"
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

// ErrBadMessage is a message the bridge cannot carry out as it is; the
// HTTP server answers it with 400.
var ErrBadMessage = errors.New("bad message")

// MaxMessage bounds a client's message.
const MaxMessage = 64 * 1024

// ParseMessage reads a message and checks its type and path.
func ParseMessage(data []byte) (Message, error) {
	var m Message
	if len(data) > MaxMessage {
		return m, fmt.Errorf("%w: %d bytes; a message has at most %d", ErrBadMessage, len(data), MaxMessage)
	}
	if err := checkText(data); err != nil {
		return m, err
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

// useFor takes the device serial into use for the message's op on path
// and returns the use with the message's values. Values the bridge's own
// definitions judge are judged before the device is used, so a bad
// message connects to nothing; those of a path only the device defines
// (a resource an app added) are judged by the device's definitions once
// it is connected.
func (s *Server) useFor(ctx context.Context, m *Message, serial string, op resource.Op, path string) (*phone.Use, []resource.Value, error) {
	o := api.EmbeddedIndex().Operation(op, path)
	params, err := o.Values(m.Value)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	u, err := s.Phone.Use(ctx, serial)
	if err != nil {
		return nil, nil, err
	}
	if o == nil && len(bytes.TrimSpace(m.Value)) > 0 {
		if params, err = u.Operation(ctx, op, path).Values(m.Value); err != nil {
			u.Done()
			return nil, nil, fmt.Errorf("%w: %v", ErrBadMessage, err)
		}
	}
	return u, params, nil
}

// route finds the device a message is for and the path on it: the
// device a path /net/<serial>/... or the message's device names, or else
// the one connected device, or the one device there is when the phone
// connects on demand.
func (s *Server) route(m *Message) (serial, path string, err error) {
	path, serial = m.Path, m.Device
	if rest, ok := cutFold(strings.TrimPrefix(path, "/"), "net/"); ok {
		named, p, _ := strings.Cut(rest, "/")
		if serial != "" && serial != named {
			return "", "", fmt.Errorf("%w: the path names device %s and device says %s", ErrBadMessage, named, serial)
		}
		serial, path = named, "/"+p
	}
	if serial != "" {
		_, err := s.Phone.Device(serial)
		return serial, path, err
	}
	var connected, all []string
	for _, st := range s.Phone.Devices() {
		if st.State == "gone" { // a device that went away is listed a while
			continue
		}
		all = append(all, st.Serial)
		if st.Connected {
			connected = append(connected, st.Serial)
		}
	}
	onDemand := s.Phone.OnDemand()
	switch {
	case len(connected) == 1:
		return connected[0], path, nil
	case len(connected) > 1:
		return "", "", fmt.Errorf("%w: several devices are connected (%s); name one with \"device\" or a path /net/<serial>/...",
			ErrBadMessage, phone.JoinSerials(connected))
	case len(all) == 0:
		return "", "", fmt.Errorf("%w: the bridge sees no devices", phone.ErrUnknownDevice)
	case len(all) == 1 && onDemand:
		return all[0], path, nil // the one device there is: connect on demand
	case len(all) > 1 && onDemand:
		return "", "", fmt.Errorf("%w: no device is connected and the bridge sees several (%s); name one with \"device\" or a path /net/<serial>/...",
			ErrBadMessage, phone.JoinSerials(all))
	}
	return "", "", fmt.Errorf("%w: no device is connected; the bridge sees %s", phone.ErrNotConnected, phone.JoinSerials(all))
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

// do carries out a get, put, post or delete message.
func (s *Server) do(ctx context.Context, m Message) (*Answer, error) {
	op, err := m.op()
	if err != nil {
		return nil, err
	}
	if op == resource.Subscribe || op == resource.Unsubscribe {
		return nil, fmt.Errorf("%w: a subscription needs a stream: use the WebSocket /api/ws or the text stream /api/output", ErrBadMessage)
	}
	serial, path, err := s.route(&m)
	if err != nil {
		return nil, err
	}
	u, params, err := s.useFor(ctx, &m, serial, op, path)
	if err != nil {
		return nil, err
	}
	defer u.Done()
	env, err := u.Do(ctx, op, path, params...)
	if err != nil {
		return nil, err
	}
	return &Answer{Device: serial, Envelope: env}, nil
}

// subscribe carries out a subscribe message: events go to sink. When the
// device refuses, the answer says why and the Sub is nil.
func (s *Server) subscribe(ctx context.Context, m Message, sink phone.Sink) (*phone.Sub, *Answer, error) {
	if op, err := m.op(); err != nil {
		return nil, nil, err
	} else if op != resource.Subscribe {
		return nil, nil, fmt.Errorf("%w: Subscribe with a %s message", ErrBadMessage, m.Type)
	}
	serial, path, err := s.route(&m)
	if err != nil {
		return nil, nil, err
	}
	u, params, err := s.useFor(ctx, &m, serial, resource.Subscribe, path)
	if err != nil {
		return nil, nil, err
	}
	defer u.Done()
	sub, env, err := u.Subscribe(ctx, path, params, sink)
	if err != nil {
		return nil, nil, err
	}
	return sub, &Answer{Device: serial, Envelope: env}, nil
}
