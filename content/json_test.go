package content_test

import (
	"encoding/json"
	"reflect"
	"senseboard"
	"senseboard/resource"
	"senseboard/senseboardtest"
	"testing"
	"time"

	"senseboard/content"
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
	for _, h := range []content.HRData{
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

// The hand-written encoders give encoding/json's bytes, also for the
// repeating values that the encoders of sample arrays look up.
func TestEncodersMatchEncodingJSON(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	subs := []*senseboardtest.Sub{d.Subscribe("/Meas/IMU9/416"), d.Subscribe("/Meas/ECG/200"), d.Subscribe("/Meas/Magn/13")}
	d.Advance(5 * time.Second)
	d2 := senseboardtest.New(t, senseboard.Config{})
	mv, hr := d2.Subscribe("/Meas/ECG/200/mV"), d2.Subscribe("/Meas/HR")
	d2.Advance(10 * time.Second)
	subs = append(subs, mv, hr)
	for i, s := range subs {
		contents := s.Contents()
		if len(contents) == 0 {
			t.Fatalf("subscription %d: no notification", i)
		}
		for _, c := range contents {
			fast := c.(resource.JSONAppender).AppendJSON(nil)
			slow, err := jsonMarshal(c)
			if err != nil || string(fast) != string(slow) {
				t.Fatalf("%T:\n%s\n%s", c, fast, slow)
			}
		}
	}
}
