package meas_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"senseboard/provider/meas"
)

// jsonMarshal encodes v with encoding/json, bypassing its AppendJSON.
func jsonMarshal(v any) ([]byte, error) {
	rv := reflect.ValueOf(v).Elem()
	// a copy of the struct's exported fields in a struct without methods
	fields := []reflect.StructField{}
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Type().Field(i)
		if f.IsExported() {
			fields = append(fields, f)
		}
	}
	t := reflect.StructOf(fields)
	cp := reflect.New(t).Elem()
	for i, f := range fields {
		cp.Field(i).Set(rv.FieldByName(f.Name))
	}
	return json.Marshal(cp.Interface())
}

// HRData's encoder gives encoding/json's bytes for any list of intervals.
func TestHRDataAppendJSON(t *testing.T) {
	for _, h := range []meas.HRData{
		{Average: 62.5, RRData: []uint16{960}},
		{Average: 0.0012345678, RRData: []uint16{65535, 0, 1}},
		{Average: -1e-7, RRData: []uint16{}},
		{Average: 3e21},
	} {
		want, err := jsonMarshal(&h)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.AppendJSON([]byte("x")); string(got) != "x"+string(want) {
			t.Errorf("%+v: %s, encoding/json %s", h, got[1:], want)
		}
	}
}
