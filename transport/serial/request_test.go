package serial

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecodeRequest: a request that decodeRequest accepts spells every
// character it decodes to (no U+FFFD it did not spell), and encodes back to
// a request that decodes the same.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"op":"get","path":"/Info"}`,
		`{"op":"put","path":"/Time","params":[{"type":"int64","value":1700000000000000}]}`,
		`{"op":"get","Path":"/Info"}`,
		"{\"op\":\"get\",\"path\":\"/Info\xff\"}",
		`{"op":"get","path":"/Info","path":"/x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		m, err := decodeRequest(payload)
		if err != nil {
			return
		}
		if strings.Contains(m.Path, "\uFFFD") && !bytes.Contains(payload, []byte("\uFFFD")) && !bytes.Contains(bytes.ToLower(payload), []byte(`\ufffd`)) {
			t.Fatalf("%q: path %q has a character the request did not spell", payload, m.Path)
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("%q: %v", payload, err)
		}
		back, err := decodeRequest(again)
		if err != nil {
			t.Fatalf("%q encodes to %s, which is refused: %v", payload, again, err)
		}
		if back2, _ := json.Marshal(back); !bytes.Equal(back2, again) {
			t.Fatalf("%q: %s, then %s", payload, again, back2)
		}
	})
}
