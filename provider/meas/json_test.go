package meas_test

import (
	"encoding/json"
	"reflect"
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
