package client

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"senseboard/resource"
	"senseboard/wire"
)

func TestReadEnvelope(t *testing.T) {
	info := map[string]any{"serial": "000123", "nested": map[string]any{"a": []int{1, 2}, "s": `with "quotes" and ,"querytimems":1`}}
	for _, e := range []resource.Envelope{
		{Status: 200, Op: resource.Get, URI: "/net/000123/Info", Content: info, QueryTime: 1234567 * time.Nanosecond},
		{Status: 200, Op: resource.Put, URI: "/net/000123/Time"},
		{Status: 204, Op: resource.Subscribe, URI: "/net/000123/Meas/HR"},
		{Status: 200, Op: resource.Get, URI: "/net/000123/Time", Content: int64(1700000000000000)},
		{Status: 200, Op: resource.Get, URI: "/net/000123/Comm/Ble/Adv/Settings", Content: "a string"},
		{Status: 400, Op: resource.Put, URI: "/net/000123/Time", Error: "parameter value takes int64"},
	} {
		raw, err := e.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		fast := &Envelope{Raw: raw}
		ok := readEnvelope(raw, fast)
		if ok != (e.Error == "") {
			t.Errorf("%s: fast path taken %v", raw, ok)
		}
		slow := &Envelope{Raw: raw}
		json.Unmarshal(raw, slow)
		got, err := decodeEnvelope(wire.Frame{Payload: raw})
		if err != nil || !reflect.DeepEqual(got, slow) {
			t.Errorf("%s:\n fast %+v\n slow %+v", raw, got, slow)
		}
	}
}

func FuzzReadEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"response":200,"responsestring":"HTTP_CODE_OK","operation":"get","uri":"/net/000123/Info","content":{"a":1},"querytimems":0,"querytimens":5000}`,
		`{"response":204,"responsestring":"HTTP_CODE_NO_CONTENT","operation":"subscribe","uri":"/net/000123/Meas/HR","querytimems":0,"querytimens":1}`,
		`{"response":200,"responsestring":"HTTP_CODE_OK","operation":"get","uri":"/x","content":"s,\"querytimems\":1","querytimems":0,"querytimens":5000}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast := &Envelope{Raw: b}
		if !readEnvelope(b, fast) {
			return
		}
		slow := &Envelope{Raw: b}
		if err := json.Unmarshal(b, slow); err != nil {
			t.Fatalf("%q: the fast path took what encoding/json refuses: %v", b, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\n fast %+v\n slow %+v", b, fast, slow)
		}
	})
}

// A device's error status is worded with its reason when it gives one,
// and alone when it gives none, with no space left where the reason would
// be.
func TestEnvelopeRefusal(t *testing.T) {
	for _, tt := range []struct {
		env  Envelope
		want string
	}{
		{Envelope{Response: 501, ResponseString: "HTTP_CODE_NOT_IMPLEMENTED"}, "status 501"},
		{Envelope{Response: 501, ResponseString: "HTTP_CODE_NOT_IMPLEMENTED", Error: "SampleRate 7 is not supported"}, "status 501: SampleRate 7 is not supported"},
		{Envelope{Response: 404, Content: []byte(`{}`)}, "status 404"},
	} {
		if got := tt.env.Refusal(); got != tt.want {
			t.Errorf("%+v: %q; want %q", tt.env, got, tt.want)
		}
	}
}
