package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"senseboard/resource"
)

// HelloMsg opens a session. Session is a random token the client chooses;
// the device echoes it in Welcome and Refuse, so that a client sharing a
// line with another can tell which answer is its own. Serial names the
// device the client wants: required on a port that serves a fleet of
// devices, and, when given to a single device, it must be that device's.
type HelloMsg struct {
	Protocol int    `json:"protocol"`
	Client   string `json:"client"`
	Session  string `json:"session"`
	Serial   string `json:"serial,omitempty"`
}

// WelcomeMsg accepts a session and says what the device is.
type WelcomeMsg struct {
	Protocol   int    `json:"protocol"`
	Session    string `json:"session"`
	Serial     string `json:"serial"`
	Product    string `json:"product"`
	SW         string `json:"sw"`
	URIPrefix  string `json:"uriPrefix"`
	MaxPayload int    `json:"maxPayload"`
}

// RefuseMsg refuses a session: Code says why for programs (empty from
// devices that predate codes), Error for people.
type RefuseMsg struct {
	Session string     `json:"session"`
	Error   string     `json:"error"`
	Code    RefuseCode `json:"code,omitempty"`
}

// RequestMsg is a request.
type RequestMsg struct {
	Op     string  `json:"op"`
	Path   string  `json:"path"`
	Params []Param `json:"params,omitempty"`
}

// EndedMsg says why a subscription ended.
type EndedMsg struct {
	Reason string `json:"reason"`
}

// ErrorMsg says what was wrong with a frame.
type ErrorMsg struct {
	Error string `json:"error"`
	// Code names an error that a client acts on (CodeNoSession); empty
	// for the others, which the client only reports.
	Code string `json:"code,omitempty"`
}

// CodeNoSession is the Code of the Error that answers a frame of a session
// the device does not hold: it never began, or the device ended it (a
// line's client that stopped reading, or fell silent) where it cannot
// close the connection, as on a serial line. The client's session is
// over; a new one starts with a Hello.
const CodeNoSession = "no-session"

// Param is one value of a request: its type name as the serial tool gives it
// (a primitive type or a record name; empty for an untyped JSON value) and
// the value as JSON.
type Param struct {
	Type  string          `json:"type,omitempty"`
	Value json.RawMessage `json:"value"`
}

// EncodeParam encodes a value for a request.
func EncodeParam(v resource.Value) Param {
	p := Param{Value: v.AppendJSON(nil)}
	switch v.Type() {
	case resource.TypeRecord:
		p.Type = v.Name()
	case resource.TypeJSON:
	default:
		p.Type = v.Type().String()
	}
	return p
}

// DecodeParam decodes a request value, keeping its type.
func DecodeParam(p Param) (resource.Value, error) {
	raw := bytes.TrimSpace(p.Value)
	if len(raw) == 0 {
		return resource.Value{}, fmt.Errorf("parameter of type %q has no value", p.Type)
	}
	if p.Type == "" {
		return resource.JSON(raw)
	}
	if p.Type == "null" {
		if string(raw) != "null" {
			return resource.Value{}, fmt.Errorf("null parameter: its value is %s; want null", clip(raw))
		}
		return resource.Null(), nil
	}
	if p.Type == "string" {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return resource.Value{}, fmt.Errorf("string parameter: %s is not a JSON string", clip(raw))
		}
		return resource.ParseValue("string", s)
	}
	for _, name := range resource.PrimitiveTypeNames() {
		if p.Type == name {
			text := string(raw)
			if name == "bool" && text != "true" && text != "false" {
				return resource.Value{}, fmt.Errorf("bool parameter: %s is not true or false", clip(raw))
			}
			if name != "bool" {
				if _, err := strconv.ParseFloat(text, 64); err != nil {
					return resource.Value{}, fmt.Errorf("%s parameter: %s is not a JSON number", name, clip(raw))
				}
			}
			return resource.ParseValue(name, text)
		}
	}
	return resource.ParseValue(p.Type, string(raw))
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// AppendJSONFrame appends a frame whose payload is v encoded as JSON.
func AppendJSONFrame(dst []byte, kind Kind, id uint32, v any) ([]byte, error) {
	start := len(dst)
	dst = BeginFrame(dst, kind, id)
	var err error
	if dst, err = resource.AppendJSON(dst, v); err != nil {
		return dst[:start], err
	}
	return EndFrame(dst, start), nil
}

// JSONFrame returns a frame whose payload is v encoded as JSON, or, when
// v does not encode, an Error frame with the same id that says why.
func JSONFrame(kind Kind, id uint32, v any) []byte {
	b, err := AppendJSONFrame(nil, kind, id, v)
	if err != nil {
		b, _ = AppendJSONFrame(nil, Error, id, &ErrorMsg{Error: err.Error()})
	}
	return b
}

// ErrorFrame returns an Error frame that answers frame id with msg.
func ErrorFrame(id uint32, msg string) []byte {
	return JSONFrame(Error, id, &ErrorMsg{Error: msg})
}

// AppendEnvelope appends a Response frame carrying an envelope.
func AppendEnvelope(dst []byte, id uint32, env *resource.Envelope) ([]byte, error) {
	start := len(dst)
	dst = BeginFrame(dst, Response, id)
	var err error
	if dst, err = env.AppendJSON(dst); err != nil {
		return dst[:start], err
	}
	return EndFrame(dst, start), nil
}
