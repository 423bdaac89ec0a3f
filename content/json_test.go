package content_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"senseboard"
	"senseboard/content"
	"senseboard/resource"
	"senseboard/senseboardtest"
	"senseboard/sensor"
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

// decoder is a notification that reads its JSON form.
type decoder interface {
	DecodeJSON([]byte) error
}

// encode returns v's JSON, as the device sends it.
func encode(t testing.TB, v any) []byte {
	b, err := resource.AppendJSON(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decoders returns a fresh notification of each type, and one of each
// that holds values, to decode into anew.
func decoders() []func() decoder {
	return []func() decoder{
		func() decoder { return new(content.MotionData) },
		func() decoder { return new(content.ECGData) },
		func() decoder { return new(content.ECGDataMV) },
		func() decoder { return new(content.HRData) },
		func() decoder { return new(content.TempData) },
		func() decoder { return content.NewMotionData(9, 3, true, false, true) },
		func() decoder { return content.NewECGData(9, content.ECGArraySize) },
		func() decoder { return content.NewHRData(70, 900) },
	}
}

// samples are notifications with values, as devices send them.
func samples() []decoder {
	m := content.NewMotionData(123456, 4, true, true, false)
	for i := range m.ArrayAcc {
		m.ArrayAcc[i] = sensor.XYZ{X: 0.123456, Y: -9.81234, Z: 1.5e-7}
		m.ArrayGyro[i] = sensor.XYZ{X: 12.5, Y: float32(i), Z: 3e21}
	}
	e := content.NewECGData(4000000000, 3)
	copy(e.Samples, []int32{-131072, 0, 131071})
	mv := content.NewECGDataMV(5, 2)
	copy(mv.Samples, []float32{-0.25, 1.125})
	return []decoder{m, e, mv, content.NewHRData(61.5, 975), &content.HRData{Average: 3}, &content.TempData{Timestamp: 7, Measurement: 309.15},
		&content.MotionData{Timestamp: 1, ArrayMagn: []sensor.XYZ{}}}
}

// What AppendJSON writes, DecodeJSON reads back, into a fresh notification
// and into one that held other values.
func TestDecodeJSONReadsAppendJSON(t *testing.T) {
	for _, want := range samples() {
		text := encode(t, want)
		for _, fresh := range decoders() {
			got := fresh()
			if reflect.TypeOf(got) != reflect.TypeOf(want) {
				continue
			}
			if err := got.DecodeJSON(text); err != nil {
				t.Fatalf("%s: %v", text, err)
			}
			if again := encode(t, got); string(again) != string(text) {
				t.Errorf("decoded %s, which encodes as %s", text, again)
			}
		}
	}
}

// Decoding a stream's notifications into one notification allocates
// nothing: the arrays reuse its room.
func TestDecodeJSONAllocs(t *testing.T) {
	for _, want := range samples()[:4] {
		text := encode(t, want)
		got := reflect.New(reflect.TypeOf(want).Elem()).Interface().(decoder)
		got.DecodeJSON(text)
		if n := testing.AllocsPerRun(100, func() { got.DecodeJSON(text) }); n != 0 {
			t.Errorf("%T: %v allocations a notification, want 0", want, n)
		}
	}
}

// What DecodeJSON refuses, it refuses with ErrJSON, saying where.
func TestDecodeJSONRefuses(t *testing.T) {
	for _, tt := range []struct {
		in, want string
	}{
		{``, "the input ends where the { of MotionData is wanted"},
		{`null`, `at byte 0, 'n' where the { of MotionData is wanted`},
		{`{"Timestamp":1} x`, `at byte 16, 'x' where the end of the input is wanted`},
		{`{"Timestamp":-1}`, "-1 is not a uint32"},
		{`{"Timestamp":1.5}`, "1.5 is not a uint32"},
		{`{"Timestamp":4294967296}`, "4294967296 is not a uint32"},
		{`{"Timestamp":01}`, `at byte 14, '1' where , or } in MotionData is wanted`},
		{`{"Timestamp":"1"}`, `at byte 13, '"' where a number is wanted`},
		{`{"ArrayAcc":[null]}`, "an element other than null"},
		{`{"ArrayAcc":[{"x":1e39}]}`, "1e39 is not a float32"},
		{`{"Time\u0073tamp":1}`, "a member name without escapes"},
		{`{"x":"a\x"}`, "an escape"},
		{`{"x":[1,2}`, ", or ] in an array"},
		{`{"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, "values nest deeper than 10000"},
		{`{"x":` + strings.Repeat(`{"a":`, 10000) + `1` + strings.Repeat("}", 10000) + `}`, "values nest deeper than 10000"},
		{`{"Time`, `the input ends where the " that ends a member name is wanted`},
		{"{\"a\n\":1}", "a character of a member name"},
		{`{"a" 1}`, "the : after a member name of MotionData"},
		{`{"Timestamp":`, "the input ends where a number is wanted"},
		{`{"Timestamp":12`, "the input ends where , or } in MotionData is wanted"},
		{`{"Timestamp":1.5`, "1.5 is not a uint32"},
		{`{"Timestamp":1e`, "the input ends where a digit of the exponent is wanted"},
		{`{"x":`, "the input ends where a value is wanted"},
		{`{"x":"abc`, `the input ends where the " that ends a string is wanted`},
		{`{"x":"\`, "the input ends where an escape is wanted"},
		{`{"x":"\u12`, "the input ends where a hexadecimal digit of an escape is wanted"},
		{`{"x":"\u00g0"}`, "at byte 10, 'g' where a hexadecimal digit of an escape is wanted"},
		{`{"x":"\u00:0"}`, "at byte 10, ':' where a hexadecimal digit"},
		{`{"x":"\u00G0"}`, "at byte 10, 'G' where a hexadecimal digit"},
	} {
		err := new(content.MotionData).DecodeJSON([]byte(tt.in))
		if !errors.Is(err, content.ErrJSON) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%.40q: %v, want ErrJSON saying %q", tt.in, err, tt.want)
		}
	}
}

// What encoding/json accepts into a notification, DecodeJSON accepts with
// the same values: strings with every escape, values nested as deep as
// allowed, and more values side by side than that depth.
func TestDecodeJSONAccepts(t *testing.T) {
	many := func(v string) string { return strings.TrimSuffix(strings.Repeat(v+",", 10001), ",") }
	for _, in := range []string{
		`{"x":"a\"b\\\/\b\f\n\r\t\u00E9\u09af\uAF00c","Timestamp":5,"y":"","z":[true,false,null,-0.5e+3]}`,
		`{"x":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `,"Timestamp":6}`,
		`{"x":` + strings.Repeat(`{"a":`, 9999) + `1` + strings.Repeat("}", 9999) + `,"Timestamp":7}`,
		`{"x":[` + many(`{}`) + `],"y":[` + many(`{"a":1}`) + `],"z":[` + many(`[]`) + `],"w":[` + many(`[1]`) + `],"Timestamp":8}`,
	} {
		for _, fresh := range decoders() {
			got := fresh()
			if err := got.DecodeJSON([]byte(in)); err != nil {
				t.Errorf("%T: %.60q: %v", got, in, err)
				continue
			}
			want := reflect.New(reflect.TypeOf(got).Elem()).Interface().(decoder)
			if err := json.Unmarshal([]byte(in), want); err != nil {
				t.Fatalf("encoding/json refuses %.60q: %v", in, err)
			}
			if g, w := encode(t, got), encode(t, want); string(g) != string(w) {
				t.Errorf("%T of %.60q: %s, encoding/json %s", got, in, g, w)
			}
		}
	}
}

// A fresh notification decodes its arrays into its own room, as one made
// by its New function does.
func TestDecodeJSONFreshRoom(t *testing.T) {
	var e content.ECGData
	var mv content.ECGDataMV
	var h content.HRData
	for _, tt := range []struct {
		d    decoder
		in   string
		room func() int
		want int
	}{
		{&e, `{"Samples":[1,2,3]}`, func() int { return cap(e.Samples) }, content.ECGArraySize},
		{&mv, `{"Samples":[1,2,3]}`, func() int { return cap(mv.Samples) }, content.ECGArraySize},
		{&h, `{"rrData":[900]}`, func() int { return cap(h.RRData) }, 1},
	} {
		if err := tt.d.DecodeJSON([]byte(tt.in)); err != nil {
			t.Fatal(err)
		}
		if got := tt.room(); got != tt.want {
			t.Errorf("%T: room for %d, want its own %d", tt.d, got, tt.want)
		}
	}
}

// FuzzDecodeJSON: what DecodeJSON accepts, encoding/json accepts into a
// fresh notification of the same type, with the same values; it decodes
// the same into a notification that held other values; and it refuses
// with ErrJSON.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range samples() {
		f.Add(encode(f, s))
	}
	f.Add([]byte(`{"timestamp":1,"ARRAYACC":[{"X":1,"q":[{}],"y":null}],"other":{"a":"\u00e9\n"},"Samples":[1,2],"average":null}`))
	f.Add([]byte(` { "rrData" : [ 1 , 65535 ] , "Measurement" : -0.0e+1 } `))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, fresh := range decoders() {
			got := fresh()
			err := got.DecodeJSON(b)
			if err != nil {
				if !errors.Is(err, content.ErrJSON) {
					t.Fatalf("%T: %v is not ErrJSON", got, err)
				}
				continue
			}
			want := reflect.New(reflect.TypeOf(got).Elem()).Interface().(decoder)
			if err := json.Unmarshal(b, want); err != nil {
				t.Fatalf("%T accepts %q, which encoding/json refuses: %v", got, b, err)
			}
			if g, w := encode(t, got), encode(t, want); string(g) != string(w) {
				t.Fatalf("%T of %q: %s, encoding/json %s", got, b, g, w)
			}
		}
	})
}

// BenchmarkDecodeJSON decodes a notification of IMU6 at 52 Hz (four
// samples of two sensors), as the load does for every notification it
// counts.
func BenchmarkDecodeJSON(b *testing.B) {
	text := encode(b, samples()[0])
	var m content.MotionData
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if err := m.DecodeJSON(text); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzExactFloat32: a JSON number's float32, from DecodeJSON, is
// strconv.ParseFloat's, whichever way DecodeJSON takes.
func FuzzExactFloat32(f *testing.F) {
	for _, s := range []string{"-9.810573", "0.0023928226", "0.07", "-0", "1e10", "1e-10", "8388607", "8388608", "12.5e-3", "3.4028235e38", "1E+2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Trim(s, "0123456789-+.eE") != "" {
			return // not a number alone
		}
		var m content.TempData
		if err := m.DecodeJSON([]byte(`{"Measurement":` + s + `}`)); err != nil {
			return
		}
		want, err := strconv.ParseFloat(s, 32)
		if err != nil {
			t.Fatalf("%q: DecodeJSON accepts what strconv refuses: %v", s, err)
		}
		if math.Float32bits(m.Measurement) != math.Float32bits(float32(want)) {
			t.Fatalf("%q: %v, strconv %v", s, m.Measurement, float32(want))
		}
	})
}

// ForPath names each stream's notification type.
func TestForPath(t *testing.T) {
	for _, tt := range []struct {
		path string
		want any
	}{
		{"/Meas/IMU6/52", &content.MotionData{}},
		{"meas/acc/13", &content.MotionData{}},
		{"/Meas/Magn/104/", &content.MotionData{}},
		{"/Meas/IMU6m/26", &content.MotionData{}},
		{"/Meas/ECG/125", &content.ECGData{}},
		{"/Meas/ECG/125/mV", &content.ECGDataMV{}},
		{"/Meas/HR", &content.HRData{}},
		{"/Meas/Temp", &content.TempData{}},
		{"/Meas/ECG", nil},
		{"/Meas/IMU9", nil},
		{"/Meas/Acc/13/x", nil},
		{"/Meas/ECG/125/V", nil},
		{"/Meas/HR/5", nil},
		{"/Info", nil},
		{"", nil},
	} {
		got := content.ForPath(tt.path)
		if reflect.TypeOf(got) != reflect.TypeOf(tt.want) {
			t.Errorf("ForPath(%q) = %T, want %T", tt.path, got, tt.want)
		}
	}
}
