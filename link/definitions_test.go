package link_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"senseboard/api"
	"senseboard/link"
)

const (
	hashA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	yamlA = "swagger: '2.0'\n"
)

var hashOfA = api.FileHash([]byte(yamlA))

// fileList returns n distinct file names as JSON strings, joined by
// commas, or as app entries when apps is true.
func fileList(n int, apps bool) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		if apps {
			fmt.Fprintf(&b, `{"name":"app%d.yaml","sha256":"%s"}`, i, hashA)
		} else {
			fmt.Fprintf(&b, `"f%d.yaml"`, i)
		}
	}
	return b.String()
}

func TestParseDefinitions(t *testing.T) {
	max := link.MaxDefinitionFiles
	for _, tt := range []struct {
		name, payload, err string // err "" when it parses
	}{
		{"index", `{"builtin":{"set":"` + hashA + `","files":["info.yaml","meas_acc.yaml"]},"apps":[{"name":"app-x.yaml","sha256":"` + hashA + `"}]}`, ""},
		{"index without apps", `{"builtin":{"set":"` + hashA + `","files":[]}}`, ""},
		{"file", `{"file":{"name":"app-x.yaml","sha256":"` + hashOfA + `","yaml":"swagger: '2.0'\n"}}`, ""},
		{"empty", `{}`, "neither an index (builtin, apps) nor a file"},
		{"both", `{"builtin":{"set":"` + hashA + `","files":[]},"file":{"name":"a.yaml","sha256":"` + hashOfA + `","yaml":"swagger: '2.0'\n"}}`, "both an index and a file"},
		{"apps without builtin", `{"apps":[]}`, "an index without builtin"},
		{"unknown field", `{"builtin":{"set":"` + hashA + `","files":[]},"extra":1}`, `unknown field "extra"`},
		{"trailing", `{"builtin":{"set":"` + hashA + `","files":[]}} {}`, "more after the JSON object"},
		{"not JSON", `[`, "unexpected EOF"},
		{"short set hash", `{"builtin":{"set":"abc","files":[]}}`, `builtin set "abc" is not 64 lower-case hex digits`},
		{"upper-case hash", `{"builtin":{"set":"` + strings.ToUpper(hashA) + `","files":[]}}`, "is not 64 lower-case hex digits"},
		{"path in a name", `{"builtin":{"set":"` + hashA + `","files":["../etc.yaml"]}}`, `file name "../etc.yaml" is not a definition file's name`},
		{"name twice", `{"builtin":{"set":"` + hashA + `","files":["a.yaml"]},"apps":[{"name":"a.yaml","sha256":"` + hashA + `"}]}`, "file a.yaml is listed twice"},
		{"long name", `{"builtin":{"set":"` + hashA + `","files":["` + strings.Repeat("a", 60) + `.yaml"]}}`, "is not a definition file's name"},
		{"app hash", `{"builtin":{"set":"` + hashA + `","files":[]},"apps":[{"name":"a.yaml","sha256":""}]}`, `file a.yaml: sha256 "" is not 64`},
		{"text not matching", `{"file":{"name":"a.yaml","sha256":"` + hashA + `","yaml":"swagger: '2.0'\n"}}`, "file a.yaml: the text does not match its sha256"},
		{"too many files", `{"builtin":{"set":"` + hashA + `","files":[` + strings.TrimSuffix(strings.Repeat(`"a.yaml",`, link.MaxDefinitionFiles+1), ",") + `]}}`, "129 built-in and 0 app files; at most 128 of each"},
		{"the most files of each", `{"builtin":{"set":"` + hashA + `","files":[` + fileList(max, false) + `]},"apps":[` + fileList(max, true) + `]}`, ""},
		{"too many app files", `{"builtin":{"set":"` + hashA + `","files":[]},"apps":[` + fileList(max+1, true) + `]}`, "0 built-in and 129 app files; at most 128 of each"},
		{"the longest name", `{"builtin":{"set":"` + hashA + `","files":["` + strings.Repeat("a", api.MaxFileName-5) + `.yaml"]}}`, ""},
		{"a name one byte too long", `{"builtin":{"set":"` + hashA + `","files":["` + strings.Repeat("a", api.MaxFileName-4) + `.yaml"]}}`, "is not a definition file's name"},
		{"not UTF-8", "{\"file\":{\"name\":\"a.yaml\",\"sha256\":\"" + hashA + "\",\"yaml\":\"\xff\"}}", "not UTF-8"},
	} {
		m, err := link.ParseDefinitions([]byte(tt.payload))
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.err != "" && (err == nil || !errors.Is(err, link.ErrDefinitions) || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: %v (%+v), want an error containing %q", tt.name, err, m, tt.err)
		}
	}
}

// An index's lists are empty, not nil, when the payload leaves them out.
func TestParseDefinitionsIndexLists(t *testing.T) {
	for _, payload := range []string{
		`{"builtin":{"set":"` + hashA + `"}}`,
		`{"builtin":{"set":"` + hashA + `","files":null},"apps":null}`,
	} {
		m, err := link.ParseDefinitions([]byte(payload))
		if err != nil || m.Builtin.Files == nil || m.Apps == nil {
			t.Errorf("%s: files %#v, apps %#v, %v; want empty lists", payload, m.Builtin.Files, m.Apps, err)
		}
	}
}

func TestParseDefinitionsRequest(t *testing.T) {
	for _, tt := range []struct {
		payload, file, err string
	}{
		{``, "", ""},
		{`{}`, "", ""},
		{`{"file":"app-stepcounter.yaml"}`, "app-stepcounter.yaml", ""},
		{`{"file":"/etc/passwd"}`, "", `file "/etc/passwd" is not a definition file's name`},
		{`{"name":"a.yaml"}`, "", `unknown field "name"`},
		{`{"file":1}`, "", "cannot unmarshal number"},
	} {
		m, err := link.ParseDefinitionsRequest([]byte(tt.payload))
		if tt.err == "" && (err != nil || m.File != tt.file) {
			t.Errorf("%q: %+v, %v; want file %q", tt.payload, m, err, tt.file)
		}
		if tt.err != "" && (!errors.Is(err, link.ErrDefinitions) || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%q: %v, want an error containing %q", tt.payload, err, tt.err)
		}
	}
}

// FuzzParseDefinitions: what ParseDefinitions accepts encodes back to a
// payload it accepts as the same message; what it refuses it refuses
// with ErrDefinitions.
func FuzzParseDefinitions(f *testing.F) {
	f.Add([]byte(`{"builtin":{"set":"` + hashA + `","files":["info.yaml"]},"apps":[{"name":"app-x.yaml","sha256":"` + hashA + `"}]}`))
	f.Add([]byte(`{"file":{"name":"app-x.yaml","sha256":"` + hashOfA + `","yaml":"swagger: '2.0'\n"}}`))
	f.Add([]byte(`{"file":"app-x.yaml"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		if _, err := link.ParseDefinitionsRequest(payload); err != nil && !errors.Is(err, link.ErrDefinitions) {
			t.Fatalf("request: %v is not an ErrDefinitions", err)
		}
		m, err := link.ParseDefinitions(payload)
		if err != nil {
			if !errors.Is(err, link.ErrDefinitions) {
				t.Fatalf("%v is not an ErrDefinitions", err)
			}
			return
		}
		b, err := json.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		again, err := link.ParseDefinitions(b)
		if err != nil {
			t.Fatalf("%s, encoded from an accepted message, is refused: %v", b, err)
		}
		if !reflect.DeepEqual(again, m) {
			t.Fatalf("%+v became %+v", m, again)
		}
	})
}
