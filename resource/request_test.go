package resource

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestOp(t *testing.T) {
	tests := []struct {
		op    Op
		name  string
		valid bool
	}{
		{0, "op(0)", false},
		{Get, "get", true},
		{Put, "put", true},
		{Post, "post", true},
		{Delete, "delete", true},
		{Subscribe, "subscribe", true},
		{Unsubscribe, "unsubscribe", true},
		{Unsubscribe + 1, "op(7)", false},
		{255, "op(255)", false},
	}
	for _, tt := range tests {
		if got := tt.op.String(); got != tt.name || tt.op.Valid() != tt.valid {
			t.Errorf("Op(%d): %q, valid %v; want %q, valid %v", uint8(tt.op), got, tt.op.Valid(), tt.name, tt.valid)
		}
		o, err := ParseOp(strings.ToUpper(tt.name))
		if tt.valid && (err != nil || o != tt.op) || !tt.valid && err == nil {
			t.Errorf("ParseOp(%q) = %v, %v", strings.ToUpper(tt.name), o, err)
		}
	}
}

func TestRequestArgs(t *testing.T) {
	var r Request
	if s := r.ArgStore(len(r.args)); cap(s) != len(r.args) || &s[:1][0] != &r.args[0] {
		t.Errorf("ArgStore(%d) is not the request's own store", len(r.args))
	}
	if s := r.ArgStore(len(r.args) + 1); cap(s) != len(r.args)+1 || &s[:1][0] == &r.args[0] {
		t.Errorf("ArgStore(%d): capacity %d, or the request's own store", len(r.args)+1, cap(s))
	}
	r.Args = append(r.ArgStore(2), Int32(1), String("x"))
	for _, tt := range []struct {
		i    int
		want Value
	}{{-1, Value{}}, {0, Int32(1)}, {1, String("x")}, {2, Value{}}} {
		if got := r.Arg(tt.i); !got.Equal(tt.want) || got.Type() != tt.want.Type() {
			t.Errorf("Arg(%d) = %v, want %v", tt.i, got, tt.want)
		}
	}
}

func TestStatus(t *testing.T) {
	for _, tt := range []struct {
		s    Status
		ok   bool
		name string
	}{
		{199, false, "HTTP_CODE_199"}, {StatusOK, true, "HTTP_CODE_OK"}, {StatusNoContent, true, "HTTP_CODE_NO_CONTENT"},
		{299, true, "HTTP_CODE_299"}, {300, false, "HTTP_CODE_300"}, {StatusNotFound, false, "HTTP_CODE_NOT_FOUND"},
	} {
		if tt.s.OK() != tt.ok || tt.s.String() != tt.name {
			t.Errorf("Status %d: OK %v, %q; want %v, %q", uint16(tt.s), tt.s.OK(), tt.s.String(), tt.ok, tt.name)
		}
	}
	err := &Error{StatusNotFound, "no such path"}
	if r := err.Response(); err.Error() != "404 no such path" || r.Status != StatusNotFound || r.Err != "no such path" {
		t.Errorf("Error: %q, response %+v", err.Error(), r)
	}
	if r := Errorf(StatusBadRequest, "bad %s", "x"); r.Status != StatusBadRequest || r.Err != "bad x" {
		t.Errorf("Errorf: %+v", r)
	}
}

func TestEnvelopeJSON(t *testing.T) {
	tests := []struct {
		env  Envelope
		want string
	}{
		{Envelope{Status: StatusOK, Op: Get, URI: "/Info", Content: Pair{1, "a"}, QueryTime: 1500 * time.Microsecond},
			`{"response":200,"responsestring":"HTTP_CODE_OK","operation":"get","uri":"/Info","content":[1,"a"],"querytimems":1,"querytimens":1500000}`},
		{Envelope{Status: StatusOK, Op: Unsubscribe, URI: "/Meas/Acc/13"},
			`{"response":200,"responsestring":"HTTP_CODE_OK","operation":"delete","uri":"/Meas/Acc/13","querytimems":0,"querytimens":0}`},
		{Envelope{Status: StatusNotFound, Op: Put, URI: "/X", Error: "no such path"},
			`{"response":404,"responsestring":"HTTP_CODE_NOT_FOUND","operation":"put","uri":"/X","querytimems":0,"querytimens":0,"error":"no such path"}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.env)
		if err != nil || string(got) != tt.want {
			t.Errorf("%+v: %s, %v\nwant %s", tt.env, got, err, tt.want)
		}
	}
	if _, err := (&Envelope{Content: func() {}}).AppendJSON(nil); err == nil {
		t.Error("content that cannot be encoded: no error")
	}
}

func TestPairJSON(t *testing.T) {
	for _, tt := range []struct {
		text string
		want Pair
		err  string // "" when it decodes
	}{
		{`[3,"Red"]`, Pair{3, "Red"}, ""},
		{`[-1,""]`, Pair{-1, ""}, ""},
		{`[3]`, Pair{}, "a pair is [value, name]"},
		{`[3,"a","b"]`, Pair{}, "a pair is [value, name]"},
		{`{"Value":3}`, Pair{}, "a pair is [value, name]"},
		{`["3","a"]`, Pair{}, "pair value"},
		{`[3,4]`, Pair{}, "cannot unmarshal"},
	} {
		var p Pair
		err := json.Unmarshal([]byte(tt.text), &p)
		if tt.err == "" && (err != nil || p != tt.want) || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: %+v, %v; want %+v, error %q", tt.text, p, err, tt.want, tt.err)
		}
		if tt.err == "" {
			if back, _ := json.Marshal(p); string(back) != tt.text {
				t.Errorf("%s encodes back as %s", tt.text, back)
			}
		}
	}
}

func TestClip(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc..."},
		{"abé", 3, "ab..."},    // é is 2 bytes: not cut in half
		{"aéb", 3, "aé..."},    // the cut falls after é
		{"ééé", 1, "..."},      // no whole rune fits
		{"\x80\x80", 1, "..."}, // not UTF-8: the cut stops at the start
		{"", 0, ""},
	} {
		if got := clip(tt.s, tt.n); got != tt.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestTypes(t *testing.T) {
	for _, tt := range []struct {
		t             Type
		name          string
		isInt, signed bool
		isFloat       bool
	}{
		{TypeInvalid, "invalid", false, false, false},
		{TypeBool, "bool", false, false, false},
		{TypeInt8, "int8", true, true, false},
		{TypeInt64, "int64", true, true, false},
		{TypeUint8, "uint8", true, false, false},
		{TypeUint64, "uint64", true, false, false},
		{TypeFloat32, "float", false, false, true},
		{TypeFloat64, "double", false, false, true},
		{TypeJSON, "json", false, false, false},
		{TypeJSON + 1, "type(16)", false, false, false},
	} {
		if tt.t.String() != tt.name || tt.t.IsInt() != tt.isInt || tt.t.IsSigned() != tt.signed || tt.t.IsFloat() != tt.isFloat {
			t.Errorf("%d: %q, int %v, signed %v, float %v; want %q, %v, %v, %v", uint8(tt.t),
				tt.t.String(), tt.t.IsInt(), tt.t.IsSigned(), tt.t.IsFloat(), tt.name, tt.isInt, tt.signed, tt.isFloat)
		}
	}
}

func TestValueDecode(t *testing.T) {
	rec, _ := RecordJSON("R", []byte(`{"a":1}`))
	js, _ := JSON([]byte(`{"a":2}`))
	for _, tt := range []struct {
		v    Value
		want int // 0: an error
	}{{rec, 1}, {js, 2}, {Int32(3), 0}, {String(`{"a":4}`), 0}} {
		var dst struct{ A int }
		err := tt.v.Decode(&dst)
		if tt.want == 0 && err == nil || tt.want != 0 && (err != nil || dst.A != tt.want) {
			t.Errorf("Decode of %v: %+v, %v; want a = %d (0: an error)", tt.v, dst, err, tt.want)
		}
	}
}

// TestHubPeak: the peak counts the most subscriptions at once, until reset.
func TestHubPeak(t *testing.T) {
	h := NewHub(0)
	c := NewClient("c", NewQueue(8))
	defer c.Close()
	var subs []*Subscription
	for _, uri := range []string{"/A", "/B", "/C"} {
		s, _ := h.Subscribe(&Request{Op: Subscribe, Client: c}, uri, &recordingSource{})
		subs = append(subs, s)
	}
	h.End(subs[0], EndSource)
	if h.Count() != 2 || h.Peak() != 3 {
		t.Errorf("count %d, peak %d; want 2, 3", h.Count(), h.Peak())
	}
	h.ResetPeak()
	if h.Peak() != 2 {
		t.Errorf("peak %d after a reset, want 2", h.Peak())
	}
}

// An envelope's refusal says its status, and its reason when it has one,
// with no space left where a reason would be.
func TestEnvelopeRefusal(t *testing.T) {
	for _, tt := range []struct {
		env  Envelope
		want string
	}{
		{Envelope{Status: StatusNotImplemented, Error: "SampleRate 7 is not supported"}, "status 501: SampleRate 7 is not supported"},
		{Envelope{Status: StatusNotImplemented}, "status 501"},
	} {
		if got := tt.env.Refusal(); got != tt.want {
			t.Errorf("%q; want %q", got, tt.want)
		}
	}
}
