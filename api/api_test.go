package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-openapi/spec"

	"senseboard/resource"
)

// The embedded files load without the Swagger 2.0 schema check for speed;
// this test holds each of them to the full validation of Parse.
func TestEmbeddedDefinitionsValidate(t *testing.T) {
	names, _ := fs.Glob(files, "*.yaml")
	if len(names) < 20 {
		t.Fatalf("only %d definition files", len(names))
	}
	for _, name := range names {
		data, _ := files.ReadFile(name)
		f, err := Parse(name, data)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if f.State == "" || f.Kind == "" || f.Title == "" || f.Version == "" {
			t.Errorf("%s: info lacks version, title, x-api-state or x-api-type", name)
		}
	}
}

func specEndpoints(t *testing.T) []Endpoint {
	t.Helper()
	data, err := os.ReadFile("testdata/endpoints.txt")
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReadEndpointList(data)
	if err != nil {
		t.Fatal(err)
	}
	specPath := filepath.Join("..", "..", "shared", "spec", "device-interface.md")
	md, err := os.ReadFile(specPath)
	if errors.Is(err, fs.ErrNotExist) {
		t.Logf("%s is absent: using the transcription in testdata/endpoints.txt alone", specPath)
		return want
	}
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseEndpointTable(md)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(got, want); d != "" {
		t.Errorf("testdata/endpoints.txt does not match the specification's table:\n%s", d)
	}
	return want
}

func diff(a, b []Endpoint) string {
	in := func(list []Endpoint) map[Endpoint]bool {
		m := map[Endpoint]bool{}
		for _, e := range list {
			m[e] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	var sb strings.Builder
	for _, e := range a {
		if !mb[e] {
			fmt.Fprintf(&sb, "  only in the first: %s\n", e)
		}
	}
	for _, e := range b {
		if !ma[e] {
			fmt.Fprintf(&sb, "  only in the second: %s\n", e)
		}
	}
	return sb.String()
}

// Every operation of the specification's endpoint table has a definition,
// and every definition is in the table or among the sensor family's
// resources that senseboard adds (testdata/family.txt).
func TestEndpointTable(t *testing.T) {
	want := specEndpoints(t)
	data, err := os.ReadFile("testdata/family.txt")
	if err != nil {
		t.Fatal(err)
	}
	family, err := ReadEndpointList(data)
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, family...)
	sortEndpoints(want)
	set, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(set.Endpoints(), want); d != "" {
		t.Errorf("definitions (first) and the specification's endpoints (second) differ:\n%s", d)
	}
}

func TestParseEndpointTableShorthand(t *testing.T) {
	md := []byte(`
| Method | Path | Request | Success result |
|---|---|---|---|
| SUBSCRIBE, POST, DELETE | /A, /A/Subscription | none | x |
| GET, PUT | /B/{X}/Params and PUT /C (since v2.2) | | |
| POST, SUBSCRIBE | /D and /E | | |
| any | /F | | |
| POST, DELETE | /G/Subscription | | |
| POST | /H/Subscription | | |
| DELETE | /I/Subscription | | |
| GET | /J/Subscription |
| GET | /K |

after the table
| GET | /L |
`)
	got, err := ParseEndpointTable(md)
	if err != nil {
		t.Fatal(err)
	}
	want := []Endpoint{{"SUBSCRIBE", "/A"}, {"GET", "/B/{X}/Params"}, {"PUT", "/B/{X}/Params"}, {"PUT", "/C"},
		{"POST", "/D"}, {"SUBSCRIBE", "/D"}, {"POST", "/E"}, {"SUBSCRIBE", "/E"},
		{"GET", "/F"}, {"PUT", "/F"}, {"POST", "/F"}, {"DELETE", "/F"}, {"SUBSCRIBE", "/F"}, {"SUBSCRIBE", "/G"},
		{"SUBSCRIBE", "/H"}, {"SUBSCRIBE", "/I"}, {"GET", "/K"}}
	sortEndpoints(want)
	if d := diff(got, want); d != "" {
		t.Errorf("parsed (first) vs want (second):\n%s", d)
	}
	// a line that is no row before the first row is passed over
	if got, err := ParseEndpointTable([]byte("| Method | Path |\nthe rows:\n| GET | /A |\n")); err != nil || fmt.Sprint(got) != "[GET /A]" {
		t.Errorf("a line before the rows: %v, %v", got, err)
	}
	for _, bad := range []string{"| Method | Path |\n|---|---|\n", "| Method | Path |\n| GET | A |\n", "no table\n"} {
		if got, err := ParseEndpointTable([]byte(bad)); err == nil {
			t.Errorf("%q: %v, want an error", bad, got)
		}
	}
}

// An endpoint list is read line by line; a bad line is named by its number.
func TestReadEndpointList(t *testing.T) {
	got, err := ReadEndpointList([]byte("# the list\n\nPUT /B\nGET /A\n"))
	if err != nil || fmt.Sprint(got) != "[GET /A PUT /B]" {
		t.Errorf("read %v, %v; want [GET /A PUT /B]", got, err)
	}
	for _, bad := range []string{"# the list\n\nGET\n", "# the list\n\nGET A\n"} {
		if _, err := ReadEndpointList([]byte(bad)); err == nil || !strings.Contains(err.Error(), "line 3: ") {
			t.Errorf("%q: %v, want an error naming line 3", bad, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	const head = "swagger: '2.0'\ninfo:\n  version: NA\n  title: T\n  x-api-state: stable\n  x-api-required: true\n  x-api-type: public\n"
	tests := []struct {
		name, doc, msg string
	}{
		{"yaml syntax", "swagger: '2.0'\ninfo: [unclosed\n", "not a Swagger 2.0 document"},
		{"not swagger", head + "paths:\n  /A:\n    get:\n      responses:\n        200:\n          description: ok\n          schema: {type: integr}\n", "invalid:"},
		{"missing extension", "swagger: '2.0'\ninfo:\n  version: NA\n  title: T\n  x-api-state: s\n  x-api-type: p\npaths:\n  /A:\n    get:\n      responses:\n        200: {description: ok}\n", "info lacks x-api-required"},
		{"subscription without notification", head + "paths:\n  /A/Subscription:\n    post:\n      responses:\n        200: {description: ok}\n    delete:\n      responses:\n        200: {description: ok}\n", "post lacks x-notification"},
		{"subscription with get", head + "paths:\n  /A/Subscription:\n    get:\n      responses:\n        200: {description: ok}\n", "exactly post (subscribe) and delete"},
		{"unsupported format", head + "paths:\n  /A:\n    put:\n      parameters:\n        - {name: v, in: query, required: true, type: integer, format: int128}\n      responses:\n        200: {description: ok}\n", "format \"int128\" is not supported"},
		{"header parameter", head + "paths:\n  /A:\n    put:\n      parameters:\n        - {name: v, in: header, required: true, type: string}\n      responses:\n        200: {description: ok}\n", "location \"header\""},
		{"no paths", head + "paths: {}\n", "no paths"},
		{"bad pattern", head + "paths:\n  /A:\n    put:\n      parameters:\n        - {name: v, in: query, required: true, type: string, pattern: '(a'}\n      responses:\n        200: {description: ok}\n", "pattern"},
	}
	for _, tt := range tests {
		_, err := Parse("bad.yaml", []byte(tt.doc))
		if err == nil || !strings.Contains(err.Error(), tt.msg) || !strings.HasPrefix(err.Error(), "api/bad.yaml: ") {
			t.Errorf("%s: error %v, want api/bad.yaml: ...%s...", tt.name, err, tt.msg)
		}
	}
}

func TestDuplicatePathRefused(t *testing.T) {
	set, err := LoadFiles("info.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := files.ReadFile("info.yaml")
	f, _ := Parse("copy.yaml", data)
	if err := set.Add(f); err == nil || !strings.Contains(err.Error(), "already defined in info.yaml") {
		t.Errorf("Add of a duplicate path: %v", err)
	}
}

func TestOperationShape(t *testing.T) {
	set, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	r := set.Resource("/component/eeprom/{eepromindex}")
	if r == nil {
		t.Fatal("EEPROM resource not found case-insensitively")
	}
	get := r.Ops[resource.Get]
	var names []string
	for _, p := range get.Params {
		names = append(names, p.Name+":"+p.TypeName())
	}
	if got := strings.Join(names, " "); got != "EepromIndex:int32 Addr:uint32 Len:uint8" {
		t.Errorf("GET EEPROM parameters %s: path parameters first, then in definition order", got)
	}
	sub := set.Resource("/Meas/Acc/{SampleRate}")
	if sub.Ops[resource.Subscribe] == nil || sub.Ops[resource.Subscribe].Notification == nil || sub.Ops[resource.Unsubscribe] == nil {
		t.Error("subscription of /Meas/Acc/{SampleRate} lacks its notification schema")
	}
	if !set.Resource("/Misc/Manufacturing").Subtree {
		t.Error("/Misc/Manufacturing is not a subtree")
	}
	if set.Resource("/Comm/Ble/HRS").File.Module != "HRS" {
		t.Error("HRS file lacks its module")
	}
}

func TestCheckContent(t *testing.T) {
	set, _ := Load()
	s := set.Resource("/Meas/Acc/{SampleRate}").Ops[resource.Subscribe].Notification
	ok := map[string]any{"Timestamp": 1, "ArrayAcc": []map[string]float32{{"x": 1, "y": 2, "z": 3}}}
	if err := CheckContent(s, ok); err != nil {
		t.Errorf("valid content: %v", err)
	}
	for name, bad := range map[string]any{
		"missing field":   map[string]any{"Timestamp": 1},
		"undeclared":      map[string]any{"Timestamp": 1, "ArrayAcc": []any{}, "Extra": 1},
		"wrong case":      map[string]any{"timestamp": 1, "ArrayAcc": []any{}},
		"wrong item type": map[string]any{"Timestamp": 1, "ArrayAcc": []any{map[string]any{"x": "a", "y": 1, "z": 1}}},
		"not an integer":  map[string]any{"Timestamp": 1.5, "ArrayAcc": []any{}},
		"negative uint32": map[string]any{"Timestamp": -1, "ArrayAcc": []any{}},
		"uint32 overflow": map[string]any{"Timestamp": 1 << 32, "ArrayAcc": []any{}},
	} {
		if err := CheckContent(s, bad); err == nil {
			t.Errorf("%s: CheckContent accepted %v", name, bad)
		}
	}
	info := set.Resource("/Info").Ops[resource.Get].Response
	if err := CheckContent(info, map[string]any{"manufacturerName": "m", "brandName": nil, "productName": "p", "variant": "v",
		"hwCompatibilityId": "h", "hwConfig": "c", "serial": "s", "pcbaSerial": "p", "sw": "1", "hw": "1", "apiLevel": "1"}); err != nil {
		t.Errorf("null in a nullable field: %v", err)
	}
	// the elements of an array are checked as the schema of its items says
	var list spec.Schema
	if err := json.Unmarshal([]byte(`{"type": "object", "properties": {"list": {"type": "array", "items": {"type": "object",
		"properties": {"a": {"type": "integer", "format": "int32", "x-nullable": true}}}}}}`), &list); err != nil {
		t.Fatal(err)
	}
	elems := func(e ...any) map[string]any { return map[string]any{"list": e} }
	if err := CheckContent(&list, elems(map[string]any{"a": 1}, map[string]any{"a": nil})); err != nil {
		t.Errorf("null in a nullable field of an element: %v", err)
	}
	for name, bad := range map[string]any{
		"undeclared in an element":     elems(map[string]any{"a": 1}, map[string]any{"a": 1, "b": 2}),
		"int32 overflow in an element": elems(map[string]any{"a": 1}, map[string]any{"a": 1 << 40}),
	} {
		if err := CheckContent(&list, bad); err == nil {
			t.Errorf("%s: CheckContent accepted %v", name, bad)
		}
	}
}

// A definition's operations read as the file says: the resource described
// by its first operation, an operation's parameter in place of the path's
// of the same name and location, the response of 200 and each status, a body
// parameter's record.
func TestParseOperations(t *testing.T) {
	const doc = `swagger: '2.0'
info: {version: NA, title: T, x-api-state: stable, x-api-required: true, x-api-type: public}
paths:
  /A/{X}:
    parameters:
      - {name: X, in: path, required: true, type: integer, format: uint8}
      - {name: q, in: query, required: false, type: integer, format: uint8}
    get:
      description: Read A.
      parameters:
        - {name: X, in: path, required: true, type: integer, format: uint16}
        - {name: q, in: query, required: false, type: integer, format: uint16}
      responses:
        200: {description: ok, schema: {type: integer, format: int32}}
        404: {description: none}
    put:
      description: Write A.
      parameters:
        - {name: v, in: body, required: true, schema: {$ref: '#/definitions/V'}}
      responses:
        200: {description: done}
definitions:
  V: {type: object, properties: {a: {type: integer, format: int32}}}
`
	f, err := Parse("a.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	set := &Set{}
	if err := set.Add(f); err != nil {
		t.Fatal(err)
	}
	r := set.Resource("/A/{X}")
	if r == nil || r.Description != "Read A." {
		t.Fatalf("resource %+v, want one described as its GET", r)
	}
	get, put := r.Ops[resource.Get], r.Ops[resource.Put]
	if len(get.Params) != 2 || get.Params[0].TypeName() != "uint16" || get.Params[1].TypeName() != "uint16" {
		t.Errorf("GET's parameters %+v, want X and q as uint16s", get.Params)
	}
	if get.Response == nil || !get.Response.Type.Contains("integer") || get.Statuses[404] != "none" {
		t.Errorf("GET's response %v and statuses %v, want an integer and 404 none", get.Response, get.Statuses)
	}
	if len(put.Params) != 3 || put.Params[1].TypeName() != "uint8" || put.Params[2].Record != "V" || put.Response != nil || put.Statuses[200] != "done" {
		t.Errorf("PUT's parameters %+v, response %v, statuses %v; want X, q as a uint8 and the record V, none, 200 done", put.Params, put.Response, put.Statuses)
	}
}

// A parameter's pattern is compiled when its definition is read.
func TestParsePattern(t *testing.T) {
	const doc = `swagger: '2.0'
info: {version: NA, title: T, x-api-state: stable, x-api-required: true, x-api-type: public}
paths:
  /A:
    put:
      parameters:
        - {name: v, in: query, required: true, type: string, pattern: '^[a-z]+$'}
        - {name: w, in: query, required: false, type: string}
      responses:
        200: {description: ok}
`
	f, err := Parse("a.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	set := &Set{}
	if err := set.Add(f); err != nil {
		t.Fatal(err)
	}
	ps := set.Resource("/A").Ops[resource.Put].Params
	if len(ps) != 2 || ps[0].pattern == nil || !ps[0].pattern.MatchString("abc") || ps[0].pattern.MatchString("aBc") || ps[1].pattern != nil {
		t.Errorf("parameters %+v, want v with its pattern compiled and w with none", ps)
	}
}
