package resource

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func TestParseValue(t *testing.T) {
	tests := []struct {
		typ, text string
		want      Value
	}{
		{"int64", "1700000000000000", Int64(1700000000000000)},
		{"int64", "-9223372036854775808", Int64(math.MinInt64)},
		{"int64", "9223372036854775807", Int64(math.MaxInt64)},
		{"int32", "-5", Int32(-5)},
		{"uint8", "255", Uint8(255)},
		{"uint8", "0x7f", Uint8(127)},
		{"uint8", "0X7F", Uint8(127)},
		{"uint16", " 104 ", Uint16(104)},
		{"uint32", "4294967295", Uint32(math.MaxUint32)},
		{"uint32", "-0", Uint32(0)},
		{"float", "0.5", Float(0.5)},
		{"double", "1e-3", Double(0.001)},
		{"bool", "true", Bool(true)},
		{"string", "123456", String("123456")},
		{"string", "a,b,c", String("a,b,c")},
	}
	for _, tt := range tests {
		got, err := ParseValue(tt.typ, tt.text)
		if err != nil {
			t.Errorf("ParseValue(%s, %q): %v", tt.typ, tt.text, err)
			continue
		}
		if !got.Equal(tt.want) {
			t.Errorf("ParseValue(%s, %q) = %v (%s), want %v (%s)", tt.typ, tt.text, got, got.Type(), tt.want, tt.want.Type())
		}
	}
}

func TestParseValueRecord(t *testing.T) {
	v, err := ParseValue("AccConfig", ` {"GRange": 8, "Note": "a,b"} `)
	if err != nil {
		t.Fatal(err)
	}
	if v.Type() != TypeRecord || v.Name() != "AccConfig" {
		t.Fatalf("got %s %q", v.Type(), v.Name())
	}
	var cfg struct{ GRange int }
	if err := v.Decode(&cfg); err != nil || cfg.GRange != 8 {
		t.Fatalf("Decode = %+v, %v", cfg, err)
	}
}

func TestParseValueErrors(t *testing.T) {
	tests := []struct {
		typ, text, msg string
		is             error // the sentinel the error wraps, if any
	}{
		{"uint8", "256", "out of range 0..255", strconv.ErrRange},
		{"uint8", "-1", "out of range 0..255", strconv.ErrRange},
		{"uint16", "70000", "out of range 0..65535", strconv.ErrRange},
		{"int64", "9223372036854775808", "out of range", strconv.ErrRange},
		{"int64", "-9223372036854775809", "out of range", strconv.ErrRange},
		{"uint32", "0x1ffffffffffffffff", "out of range", strconv.ErrRange},
		{"int64", "12abc", "not an integer", strconv.ErrSyntax},
		{"int64", "", "not an integer", strconv.ErrSyntax},
		{"uint32", "1.5", "not an integer", strconv.ErrSyntax},
		{"float", "NaN", "not a finite number", nil},
		{"bool", "yes", "not true or false", nil},
		{"string", "\xff", "UTF-8", nil},
		{"AdvSettings", "[1,2]", "not a JSON object", nil},
		{"AdvSettings", "{", "not a JSON object", nil},
		{"no-such-type", "1", "unknown type", nil},
	}
	for _, tt := range tests {
		_, err := ParseValue(tt.typ, tt.text)
		if err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("ParseValue(%s, %q) error = %v, want containing %q", tt.typ, tt.text, err, tt.msg)
		}
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("ParseValue(%s, %q) error = %v, want one that matches %v", tt.typ, tt.text, err, tt.is)
		}
	}
}

func TestValueAppendJSON(t *testing.T) {
	rec, _ := RecordJSON("X", []byte(`{"a":1}`))
	tests := []struct {
		v    Value
		want string
	}{
		{Int64(-3), "-3"},
		{Uint32(7), "7"},
		{Float(0.1), "0.1"},
		{Double(1e21), "1e+21"},
		{Bool(false), "false"},
		{String(`a"<b>`), `"a\"\u003cb\u003e"`},
		{rec, `{"a":1}`},
		{Null(), "null"},
	}
	for _, tt := range tests {
		if got := string(tt.v.AppendJSON(nil)); got != tt.want {
			t.Errorf("AppendJSON(%v) = %s, want %s", tt.v, got, tt.want)
		}
	}
}

// The float encoders switch to the exponent form outside [1e-6, 1e21), as
// encoding/json does, a float32 judged as a float32: float32(1e-6) is below
// 1e-6 as a float64 yet prints as 0.000001. Each case is checked against
// encoding/json too, after a prefix, which the exponent's clean-up must leave.
func TestAppendFloatCutOffs(t *testing.T) {
	tests := []struct {
		v    float64
		f32  bool
		want string
	}{
		{1e-6, false, "0.000001"},
		{-1e-6, false, "-0.000001"},
		{math.Nextafter(1e-6, 0), false, "9.999999999999997e-7"},
		{1e-7, false, "1e-7"},
		{1.5e-10, false, "1.5e-10"},
		{1e-100, false, "1e-100"},
		{1e21, false, "1e+21"},
		{-1e21, false, "-1e+21"},
		{math.Nextafter(1e21, 0), false, "999999999999999900000"},
		{0, false, "0"},
		{math.Copysign(0, -1), false, "-0"},
		{float64(float32(1e-6)), true, "0.000001"},
		{float64(float32(-1e-6)), true, "-0.000001"},
		{float64(math.Nextafter32(1e-6, 0)), true, "9.999999e-7"},
		{float64(float32(1e-7)), true, "1e-7"},
		{float64(float32(1e21)), true, "1e+21"},
		{float64(math.Nextafter32(1e21, 0)), true, "999999950000000000000"},
		{float64(-math.Nextafter32(1e21, 0)), true, "-999999950000000000000"},
		{0, true, "0"},
	}
	for _, tt := range tests {
		var got, want []byte
		if tt.f32 {
			got = AppendFloat32([]byte("x:"), float32(tt.v))
			want, _ = json.Marshal(float32(tt.v))
		} else {
			got = AppendFloat64([]byte("x:"), tt.v)
			want, _ = json.Marshal(tt.v)
		}
		if string(got) != "x:"+tt.want || string(want) != tt.want {
			t.Errorf("%v (float32 %v): %s, want x:%s (encoding/json: %s)", tt.v, tt.f32, got, tt.want, want)
		}
	}
}

// AppendString escapes as encoding/json does: control characters, quotes,
// backslashes and HTML's <, > and &, U+2028 and U+2029, and bytes that are
// not UTF-8 as U+FFFD, and passes any other character as it is.
func TestAppendString(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain", `"plain"`},
		{"a\"b\\c", `"a\"b\\c"`},
		{"\b\f\n\r\t\x01\x1f", `"\b\f\n\r\t\u0001\u001f"`},
		{"<a&b>", `"\u003ca\u0026b\u003e"`},
		{"ä€😀", `"ä€😀"`},
		{"\u2027\u2028\u2029\u202a", `"` + "\u2027" + `\u2028\u2029` + "\u202a" + `"`},
		{"x\x80y\xffz", `"x\ufffdy\ufffdz"`},
		{"\xe2\x80", `"\ufffd\ufffd"`},
	} {
		want, _ := json.Marshal(tt.in)
		if got := AppendString(nil, tt.in); string(got) != tt.want || string(want) != tt.want {
			t.Errorf("AppendString(%q) = %s, want %s (encoding/json: %s)", tt.in, got, tt.want, want)
		}
	}
}

// AppendString and the float encoders must give encoding/json's bytes.
func FuzzAppendJSONMatchesEncodingJSON(f *testing.F) {
	f.Add("plain", 1.5, float32(0.1))
	f.Add("<tag>&\u2028\x01\xff\"\\", 1e-7, float32(3e21))
	f.Add("", math.Copysign(0, -1), float32(-1e-9))
	f.Fuzz(func(t *testing.T, s string, d float64, fl float32) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
		if !math.IsNaN(d) && !math.IsInf(d, 0) {
			want, _ := json.Marshal(d)
			if got := AppendFloat64(nil, d); string(got) != string(want) {
				t.Fatalf("AppendFloat64(%v) = %s, want %s", d, got, want)
			}
		}
		if !math.IsNaN(float64(fl)) && !math.IsInf(float64(fl), 0) {
			want, _ := json.Marshal(fl)
			if got := AppendFloat32(nil, fl); string(got) != string(want) {
				t.Fatalf("AppendFloat32(%v) = %s, want %s", fl, got, want)
			}
		}
	})
}

func FuzzParseValue(f *testing.F) {
	for _, s := range [][2]string{{"int64", "12"}, {"uint8", "0x10"}, {"uint32", "-0"}, {"string", "x"},
		{"AdvSettings", `{"Interval":800}`}, {"float", "1e40"}, {"bool", "1"}, {"Rec", "{}"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, typ, text string) {
		v, err := ParseValue(typ, text)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if v.Type() == TypeInvalid {
			t.Fatalf("ParseValue(%q, %q) returned an invalid value", typ, text)
		}
		if v.Type().IsInt() {
			lo, hi := v.Type().IntRange()
			if v.Type().IsSigned() && (v.Int() < lo || v.Int() > int64(hi)) || !v.Type().IsSigned() && v.Uint() > hi {
				t.Fatalf("ParseValue(%q, %q) = %v outside %d..%d", typ, text, v, lo, hi)
			}
			// The decimal form parses back to the same value.
			back, err := ParseValue(typ, v.String())
			if err != nil || !back.Equal(v) {
				t.Fatalf("round trip of %v: %v %v", v, back, err)
			}
		}
		if !json.Valid(v.AppendJSON(nil)) {
			t.Fatalf("AppendJSON of %v is not JSON: %s", v, v.AppendJSON(nil))
		}
	})
}

// The cache must give AppendFloat32's bytes, for values it holds, values
// that collide with them, and values too long to keep.
func FuzzFloat32Cache(f *testing.F) {
	f.Add(float32(9.80665), float32(-0.00012345678), float32(3e21))
	f.Add(float32(0), float32(math.Copysign(0, -1)), float32(1e-7))
	var c Float32Cache
	f.Fuzz(func(t *testing.T, a, b, d float32) {
		for _, v := range []float32{a, b, d, a, b, d, -a, a / 3} {
			if got, want := c.Append(nil, v), AppendFloat32(nil, v); string(got) != string(want) {
				t.Fatalf("cache gives %s for %v, want %s", got, v, want)
			}
		}
	})
}

func TestFloat32Cache(t *testing.T) {
	var c Float32Cache
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200000 {
		var v float32
		switch i % 3 {
		case 0: // quantized samples, which repeat and collide
			v = float32(float64(rng.IntN(20000)-10000) * 0.000598)
		case 1: // any bits, NaN and infinities included
			v = math.Float32frombits(rng.Uint32())
		default:
			v = float32(rng.NormFloat64() * 1e-5)
		}
		if got, want := c.Append([]byte("x"), v), AppendFloat32([]byte("x"), v); string(got) != string(want) {
			t.Fatalf("cache gives %s for %v, want %s", got, v, want)
		}
	}
}

// The cache keeps the long encodings of values near zero, which sensors give
// often, as well as the short ones.
func TestFloat32CacheKeepsLongEncodings(t *testing.T) {
	for _, v := range []float32{-0.0023928226, -0.0000012345679, -1.2345679e-38, 9.80665, 1e18 /* 19 bytes, as many as an entry holds */} {
		var c Float32Cache
		text := string(c.Append(nil, v))
		bits := math.Float32bits(v)
		e := c.entries[(bits^bits>>15)*2654435761>>8&(floatCacheSize-1)]
		if e.bits != bits || string(e.text[:e.n]) != text {
			t.Errorf("%s (%d bytes) is not kept: entry %q", text, len(text), e.text[:e.n])
		}
	}
}

func TestCheckJSONText(t *testing.T) {
	tests := []struct {
		in, err string // err is empty for text that passes
	}{
		{`{"path": "/Info"}`, ""},
		{`{"s": "ä \u00e4 \ud83d\ude00 \\ud800"}`, ""},
		{"{\"path\": \"/Info\xff\"}", "byte 15 (0xff) is not UTF-8"},
		{`{"path": "/Info\ud800"}`, `the escape \uD800 at byte 15 is half of a surrogate pair`},
		{`{"path": "\udc00x"}`, `\uDC00`},
		{`"\ud83d\u0041"`, `\uD83D`},
		{`"\ud83d`, `\uD83D`},
		{`"\udc00\udc00"`, `\uDC00 at byte 1`}, // two low halves are no pair
		{`"\udbff\udfff"`, ""},                 // the last pair
		{`"\ud800\udc00"`, ""},                 // the first pair
	}
	for _, tt := range tests {
		err := CheckJSONText([]byte(tt.in))
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%q: %v, want %q", tt.in, err, tt.err)
		}
	}
}

func TestCheckObjectKeys(t *testing.T) {
	tests := []struct{ in, err string }{
		{`{"op": "get", "path": "/Info"}`, ""},
		{`{"op": "get", "Path": "/Info"}`, `unknown field "Path"; allowed: op, path, params`},
		{`{"op": "get", "parms": []}`, `unknown field "parms"`},
		{`{"op": "get", "op": "put"}`, `field "op" given twice`},
		{`[1]`, ""},
	}
	for _, tt := range tests {
		err := CheckObjectKeys([]byte(tt.in), "op", "path", "params")
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || err.Error() != tt.err && !strings.HasPrefix(err.Error(), tt.err)) {
			t.Errorf("%q: %v, want %q", tt.in, err, tt.err)
		}
	}
}

func TestCheckJSON(t *testing.T) {
	tests := []struct{ in, err string }{
		{`{"a": {"b": 1, "c": [{"b": 2}, {"b": 3}]}, "b": {"a": 1}}`, ""},
		{`{"a": 1, "a": 2}`, `field "a" given twice`},
		{`{"a": {"b": 1, "b": 1}}`, `field "b" given twice`},
		{`[{"x": [1, {"y": 1, "y": 2}]}]`, `field "y" given twice`},
		{`{"a": "a", "b": "a"}`, ""},
		{"\"\xfe\"", "not UTF-8"},
	}
	for _, tt := range tests {
		err := CheckJSON([]byte(tt.in))
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%q: %v, want %q", tt.in, err, tt.err)
		}
	}
}

// FuzzCheckJSON: text that CheckJSON passes decodes without a character
// being replaced: no U+FFFD that the text did not spell.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`{"op":"get","path":"/Info"}`, `{"a":"\ud83d\ude00","b":[{"a":1}]}`, "\"\xff\"", `{"a":1,"a":2}`, `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if CheckJSON(b) != nil || !json.Valid(b) {
			return
		}
		var x any
		if err := json.Unmarshal(b, &x); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		spelled := strings.Count(string(b), "\uFFFD") + strings.Count(strings.ToLower(string(b)), `\ufffd`)
		var found int
		var walk func(any)
		walk = func(x any) {
			switch x := x.(type) {
			case string:
				found += strings.Count(x, "\uFFFD")
			case []any:
				for _, v := range x {
					walk(v)
				}
			case map[string]any:
				for k, v := range x {
					found += strings.Count(k, "\uFFFD")
					walk(v)
				}
			}
		}
		walk(x)
		if found > spelled {
			t.Fatalf("%q decodes with %d replacement characters, %d spelled", b, found, spelled)
		}
	})
}
