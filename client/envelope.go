package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"senseboard/wire"
)

// decodeEnvelope reads a Response frame's envelope. The device writes its
// fields in one order, without spaces; readEnvelope takes that form directly,
// which is several times faster than encoding/json, and anything else goes
// to encoding/json. Both give the same envelope (FuzzReadEnvelope).
func decodeEnvelope(f wire.Frame) (*Envelope, error) {
	env := &Envelope{Raw: f.Payload}
	if readEnvelope(f.Payload, env) {
		return env, nil
	}
	*env = Envelope{Raw: f.Payload}
	if err := json.Unmarshal(f.Payload, env); err != nil {
		return nil, fmt.Errorf("response is not an envelope: %w", err)
	}
	return env, nil
}

var errSlow = errors.New("not the device's form")

// readEnvelope reads the device's form of an envelope without an error
// field: {"response":N,"responsestring":S,"operation":S,"uri":S[,"content":V],
// "querytimems":N,"querytimens":N}, with strings free of escapes. It reports
// false for anything else.
func readEnvelope(b []byte, env *Envelope) bool {
	r := reader{b: b}
	r.lit(`{"response":`)
	env.Response = int(r.int())
	r.lit(`,"responsestring":`)
	env.ResponseString = r.str()
	r.lit(`,"operation":`)
	env.Operation = r.str()
	r.lit(`,"uri":`)
	env.URI = r.str()
	if r.err != nil {
		return false
	}
	// the content runs to the querytime fields at the end
	i := bytes.LastIndex(b, []byte(`,"querytimems":`))
	if i < r.i {
		return false
	}
	tail := reader{b: b, i: i}
	tail.lit(`,"querytimems":`)
	env.QueryTimeMs = tail.int()
	tail.lit(`,"querytimens":`)
	env.QueryTimeNs = tail.int()
	tail.lit(`}`)
	if tail.err != nil || tail.i != len(b) {
		return false
	}
	if rest := b[r.i:i]; len(rest) > 0 {
		content, ok := bytes.CutPrefix(rest, []byte(`,"content":`))
		if !ok || !json.Valid(content) || content[0] == ' ' || bytes.Equal(content, []byte("null")) {
			return false
		}
		env.Content = content
	}
	return true
}

// reader reads the device's form of JSON; err is set at the first surprise.
type reader struct {
	b   []byte
	i   int
	err error
}

func (r *reader) lit(s string) {
	if r.err == nil && !bytes.HasPrefix(r.b[r.i:], []byte(s)) {
		r.err = errSlow
	}
	r.i += len(s)
}

// int reads a JSON integer without a sign or with a minus.
func (r *reader) int() int64 {
	if r.err != nil {
		return 0
	}
	j := r.i
	if j < len(r.b) && r.b[j] == '-' {
		j++
	}
	start := j
	for j < len(r.b) && r.b[j] >= '0' && r.b[j] <= '9' {
		j++
	}
	if j == start || (r.b[start] == '0' && j-start > 1) {
		r.err = errSlow
		return 0
	}
	v, err := strconv.ParseInt(string(r.b[r.i:j]), 10, 64)
	if err != nil {
		r.err = errSlow
		return 0
	}
	r.i = j
	return v
}

// str reads a JSON string of printable ASCII without escapes.
func (r *reader) str() string {
	if r.err != nil || r.i >= len(r.b) || r.b[r.i] != '"' {
		r.err = errSlow
		return ""
	}
	for j := r.i + 1; j < len(r.b); j++ {
		switch c := r.b[j]; {
		case c == '"':
			s := string(r.b[r.i+1 : j])
			r.i = j + 1
			return s
		case c == '\\' || c < 0x20 || c >= 0x7F:
			r.err = errSlow
			return ""
		}
	}
	r.err = errSlow
	return ""
}
