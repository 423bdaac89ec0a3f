package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"senseboard/api"
	"senseboard/resource"
)

// The embedded index finds an operation on a device's path, path
// parameters included, and reads a message's value as its parameters: one
// body parameter as the value itself, several as an object by name in any
// case, in the definition's order.
func TestIndexAndValues(t *testing.T) {
	ix := api.EmbeddedIndex()
	if ix.Operation(resource.Get, "/Info") == nil || ix.Operation(resource.Subscribe, "/Meas/Acc/104") == nil {
		t.Fatal("GET /Info or SUBSCRIBE /Meas/Acc/104 not found")
	}
	if ix.Operation(resource.Get, "/No/Such") != nil {
		t.Error("an operation on a path no definition has")
	}
	eeprom := ix.Operation(resource.Get, "/Component/Eeprom/0")
	if eeprom == nil {
		t.Fatal("GET /Component/Eeprom/0 not found")
	}
	// an operation of two optional parameters
	f, err := api.Parse("optional.yaml", []byte("swagger: '2.0'\ninfo: {version: NA, title: T, x-api-state: stable, x-api-required: true, x-api-type: public}\n"+
		"paths:\n  /A:\n    put:\n      parameters:\n"+
		"        - {name: A, in: query, required: false, type: integer, format: int32}\n"+
		"        - {name: B, in: query, required: false, type: integer, format: int32}\n"+
		"      responses:\n        200: {description: ok}\n"))
	if err != nil {
		t.Fatal(err)
	}
	set := &api.Set{}
	if err := set.Add(f); err != nil {
		t.Fatal(err)
	}
	optional := api.NewIndex(set).Operation(resource.Put, "/A")
	for _, tt := range []struct {
		o     *api.Operation
		value string
		want  string // the values as JSON, or the error's text
	}{
		{nil, ``, `[]`},
		{nil, `{"a":1}`, `[{"a":1}]`},
		{ix.Operation(resource.Put, "/Time"), `1700000000000000`, `[1700000000000000]`},
		{eeprom, `{"len":3,"ADDR":300}`, `[300,3]`},
		{eeprom, `{"Addr":300}`, "missing parameter Len (it is required)"},
		{eeprom, `{"Addr":1,"Len":1,"addr":2}`, "given twice"},
		{eeprom, `{"Addr":1,"Size":1}`, `has no parameter "Size"`},
		{eeprom, `[1,2]`, "takes 2 parameters: the value is an object"},
		{eeprom, `"` + strings.Repeat("x", 58) + `"`, `x" given`}, // 60 bytes, shown whole
		{eeprom, `"` + strings.Repeat("x", 59) + `"`, `x... given`},
		{optional, `{}`, `[]`},
		{optional, `{"b":2}`, "missing parameter A (it is optional, but a later parameter is given)"},
		{optional, `{"a":1}`, `[1]`},
	} {
		vals, err := tt.o.Values(json.RawMessage(tt.value))
		got := "["
		for i, v := range vals {
			if i > 0 {
				got += ","
			}
			got += string(v.AppendJSON(nil))
		}
		got += "]"
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tt.want) {
			t.Errorf("%s: %s, want %s", tt.value, got, tt.want)
		}
	}
}
