package bridge

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// A close frame carries at most 123 bytes of reason: longer reasons are
// cut at a character boundary.
func TestCloseReason(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int // bytes
	}{
		{"short", "device 000123: disconnected", 27},
		{"exactly 123", strings.Repeat("a", 123), 123},
		{"long", strings.Repeat("a", 200), 123},
		{"a rune across the cut", strings.Repeat("a", 122) + "é" + "bc", 122},
		{"empty", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := closeReason(tc.in)
			if len(got) != tc.want || !utf8.ValidString(got) || !strings.HasPrefix(tc.in, got) {
				t.Errorf("closeReason(%q) = %q (%d bytes), want the first %d bytes", tc.in, got, len(got), tc.want)
			}
		})
	}
}

// The GSP WebSocket's text messages are reads: an op "read" and a
// characteristic, nothing else.
func TestParseGSPRead(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     gspRead
		err      string // in the error
	}{
		{"16-bit UUID", `{"op":"read","char":"2a19"}`, gspRead{"read", "2a19"}, ""},
		{"full UUID", `{"char":"00002a19-0000-1000-8000-00805f9b34fb","op":"read"}`, gspRead{"read", "00002a19-0000-1000-8000-00805f9b34fb"}, ""},
		{"not JSON", "hello", gspRead{}, "invalid character"},
		{"another op", `{"op":"write","char":"2a19"}`, gspRead{}, `op "write": the one op is "read"`},
		{"no op", `{"char":"2a19"}`, gspRead{}, `op ""`},
		{"no char", `{"op":"read"}`, gspRead{}, "char) is missing"},
		{"unknown field", `{"op":"read","char":"2a19","data":"AA=="}`, gspRead{}, `unknown field "data"`},
		{"two objects", `{"op":"read","char":"2a19"}{}`, gspRead{}, "more than one JSON object"},
		{"a string", `"read"`, gspRead{}, "cannot unmarshal"},
		{"field names in another case", `{"Op":"read","CHAR":"2a19"}`, gspRead{"read", "2a19"}, ""},
		{"the op in another case", `{"op":"Read","char":"2a19"}`, gspRead{}, `op "Read": the one op is "read"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseGSPRead([]byte(tc.in))
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err %v, want one with %q", err, tc.err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzParseGSPRead: no text message crashes the parser; one it accepts is a
// read of a named characteristic and reads the same once written again.
func FuzzParseGSPRead(f *testing.F) {
	for _, s := range []string{`{"op":"read","char":"2a19"}`, `{"op":"read"}`, `{"op":"read","char":"2a19"} `, "", "{}", `{"op":"read","char":"2a19","x":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseGSPRead(b)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("refused %q without a reason", b)
			}
			return
		}
		if m.Op != "read" || m.Char == "" {
			t.Fatalf("accepted %+v", m)
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if m2, err := parseGSPRead(again); err != nil || m2 != m {
			t.Fatalf("%s read again as %+v, %v", again, m2, err)
		}
	})
}
