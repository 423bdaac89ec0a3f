package bridge

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"senseboard/api"
	"senseboard/resource"
)

func TestParseMessage(t *testing.T) {
	tests := []struct {
		in   string
		want Message
		err  string
	}{
		{in: `{"type":"get","path":"/Info"}`, want: Message{Type: "get", Path: "/Info"}},
		{in: `{"type":"PUT","path":"/Time","value":1700000000000000,"id":3}`, want: Message{Type: "PUT", Path: "/Time", Value: json.RawMessage("1700000000000000"), ID: "3"}},
		{in: `{"type":"put","path":"/Ui/Ind/Visual","value":{"IndicationType":2},"id":"a","device":"000123"}`,
			want: Message{Type: "put", Path: "/Ui/Ind/Visual", Value: json.RawMessage(`{"IndicationType":2}`), ID: "a", Device: "000123"}},
		{in: `{"type":"unsubscribe","id":"s1"}`, want: Message{Type: "unsubscribe", ID: "s1"}},
		{in: `{"type":"unsubscribe"}`, err: `"unsubscribe" message without a path`},
		{in: `{"type":"get"}`, err: `"get" message without a path`},
		{in: `{"path":"/Info"}`, err: "no type"},
		{in: `{"type":"head","path":"/Info"}`, err: `unknown type "head"`},
		{in: `{"type":"get","path":"/Info","id":true}`, err: "id true: a string or a number"},
		{in: `{"type":"get","path":"/Info"} {"type":"get","path":"/Time"}`, err: "one message at a time"},
		{in: `{"type":"get","path":"/Info","extra":1}`, err: `unknown field "extra"`},
		{in: `"get /Info"`, err: "not a JSON message"},
		{in: ``, err: "not a JSON message"},
		{in: `{"type":"get","path":"/` + strings.Repeat("a", MaxMessage) + `"}`, err: "a message has at most 65536"},
		{in: "{\"type\":\"get\",\"path\":\"/Info\xc0\"}", err: `"path" is not valid UTF-8: its byte 5 is 0xc0`},
		{in: "{\"type\":\"get\",\"path\":\"/Info\",\"id\":\"\xff\"}", err: `"id" is not valid UTF-8`},
		{in: "{\"type\":\"get\",\"path\":\"/Info\",\"p\xffth\":1}", err: `a field name in the body is not valid UTF-8`},
		{in: `{"type":"get","path":"/Info\udc00"}`, err: `"path" is not valid UTF-8: the escape \uDC00`},
	}
	for _, tt := range tests {
		got, err := ParseMessage([]byte(tt.in))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrBadMessage) {
				t.Errorf("%.60s: error %v, want one with %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got.Type != tt.want.Type || got.Path != tt.want.Path || string(got.Value) != string(tt.want.Value) ||
			got.ID != tt.want.ID || got.Device != tt.want.Device {
			t.Errorf("%s: %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		`{"type":"get","path":"/Info","id":1}`,
		`{"type":"subscribe","path":"/net/000123/Meas/Acc/104","id":"a"}`,
		`{"type":"put","path":"/Time","value":1700000000000000}`,
		`{"type":"unsubscribe","id":"a"}`,
		`{"type":"put","path":"Ui/Ind/Visual","value":{"IndicationType":1},"device":"000123"}`,
		`{"type":"get","path":"/Component/Eeprom/0","value":{"addr":300,"Len":3}}`,
		`{"type":"put","path":"/Component/Eeprom/1","value":{"Addr":1,"Data":{"bytes":[1]},"ADDR":2}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMessage(data)
		if err != nil {
			if !errors.Is(err, ErrBadMessage) {
				t.Fatalf("%q: error %v is not a bad message", data, err)
			}
			return
		}
		if _, err := m.op(); err != nil {
			t.Fatalf("%q: accepted with type %q", data, m.Type)
		}
		if err := resource.CheckJSONText(data); err != nil {
			t.Fatalf("%q: accepted, but %v: a path or name read from it would not be the client's", data, err)
		}
		op, _ := m.op()
		api.EmbeddedIndex().Operation(op, m.Path).Values(m.Value) // refuses or reads, never panics
	})
}
