package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math"
	"testing"

	"senseboard/resource"
)

type got struct {
	Kind    Kind
	ID      uint32
	Payload string
}

func decodeAll(d *Decoder, chunks ...[]byte) []got {
	var out []got
	for _, c := range chunks {
		d.Feed(c, func(f Frame) { out = append(out, got{f.Kind, f.ID, string(f.Payload)}) })
	}
	return out
}

func frames(n int) []byte {
	var b []byte
	for i := range n {
		b = AppendFrame(b, Request, uint32(i+1), []byte(fmt.Sprintf(`{"op":"get","path":"/Info","n":%d}`, i)))
	}
	return b
}

func TestRoundTripWholeAndByteByByte(t *testing.T) {
	stream := frames(5)
	whole := decodeAll(NewDecoder(0), stream)
	if len(whole) != 5 || whole[4].ID != 5 || whole[0].Kind != Request {
		t.Fatalf("whole: %v", whole)
	}
	d := NewDecoder(0)
	var pieces [][]byte
	for i := range stream {
		pieces = append(pieces, stream[i:i+1])
	}
	if split := decodeAll(d, pieces...); fmt.Sprint(split) != fmt.Sprint(whole) {
		t.Errorf("byte by byte: %v", split)
	}
	if d.Skipped != 0 || d.Broken != 0 {
		t.Errorf("skipped %d, broken %d on a clean stream", d.Skipped, d.Broken)
	}
}

func TestResynchronisation(t *testing.T) {
	good := AppendFrame(nil, Ping, 7, nil)
	corrupt := AppendFrame(nil, Request, 8, []byte(`{"op":"get"}`))
	corrupt[len(corrupt)-1] ^= 0xFF // bad checksum
	truncated := AppendFrame(nil, Request, 9, []byte(`{"op":"put"}`))[:15]
	oversized := AppendFrame(nil, Request, 10, nil)
	oversized[8], oversized[9], oversized[10] = 0xFF, 0xFF, 0x0F
	otherVersion := AppendFrame(nil, Request, 11, nil)
	otherVersion[2] = 9
	tests := []struct {
		name   string
		stream []byte
		want   string
		broken uint64
	}{
		{"garbage first", append([]byte("noise\xa5\x00\xa5"), good...), "[{ping 7 }]", 0},
		{"bad checksum then good", append(append([]byte{}, corrupt...), good...), "[{ping 7 }]", 1},
		{"truncated then good", append(append([]byte{}, truncated...), good...), "[{ping 7 }]", 1},
		{"oversized then good", append(append([]byte{}, oversized...), good...), "[{ping 7 }]", 1},
		{"unknown version then good", append(append([]byte{}, otherVersion...), good...), "[{ping 7 }]", 1},
		{"good, garbage, good", append(append(append([]byte{}, good...), "\xa5\x5a\x01"...), good...), "[{ping 7 } {ping 7 }]", 1},
	}
	for _, tt := range tests {
		for _, step := range []int{len(tt.stream), 1, 3} {
			d := NewDecoder(1024)
			var chunks [][]byte
			for i := 0; i < len(tt.stream); i += step {
				chunks = append(chunks, tt.stream[i:min(i+step, len(tt.stream))])
			}
			if g := fmt.Sprint(decodeAll(d, chunks...)); g != tt.want {
				t.Errorf("%s (pieces of %d): %s, want %s", tt.name, step, g, tt.want)
			}
		}
	}
	d := NewDecoder(1024)
	decodeAll(d, oversized)
	if !d.Oversized.OK || d.Oversized.ID != 10 || d.Oversized.Kind != Request {
		t.Errorf("oversized frame not reported: %+v", d.Oversized)
	}
}

func TestParamRoundTrip(t *testing.T) {
	rec, _ := resource.RecordJSON("AccConfig", []byte(`{"GRange":8}`))
	js, _ := resource.JSON([]byte(`[1,2]`))
	values := []resource.Value{
		resource.Int64(math.MinInt64), resource.Int64(math.MaxInt64), resource.Int32(-7),
		resource.Uint8(255), resource.Uint16(65535), resource.Uint32(math.MaxUint32),
		resource.Float(0.1), resource.Double(1e-300), resource.Bool(true), resource.String("a,b \"c\" ä"),
		rec, js, resource.Null(),
	}
	for _, v := range values {
		b, err := json.Marshal(EncodeParam(v))
		if err != nil {
			t.Fatal(err)
		}
		var p Param
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		back, err := DecodeParam(p)
		if err != nil {
			t.Errorf("%v: %v", v, err)
			continue
		}
		if !back.Equal(v) {
			t.Errorf("%s %v came back as %s %v (%s)", v.Type(), v, back.Type(), back, b)
		}
	}
}

func TestDecodeParamErrors(t *testing.T) {
	for _, p := range []Param{
		{Type: "uint8", Value: json.RawMessage(`300`)},
		{Type: "uint8", Value: json.RawMessage(`"3"`)},
		{Type: "string", Value: json.RawMessage(`3`)},
		{Type: "bool", Value: json.RawMessage(`1`)},
		{Type: "AdvSettings", Value: json.RawMessage(`[1]`)},
		{Type: "no such type!", Value: json.RawMessage(`1`)},
		{Type: "int64"},
		{Type: "null", Value: json.RawMessage(`5`)},
	} {
		if v, err := DecodeParam(p); err == nil {
			t.Errorf("%+v decoded to %v", p, v)
		}
	}
}

// notification is what an IMU9 notification at 104 Hz weighs.
type notification struct{ b []byte }

func (n *notification) AppendJSON(b []byte) []byte { return append(b, n.b...) }

func BenchmarkAppendNotification(b *testing.B) {
	content := &notification{bytes.Repeat([]byte(`{"x":-9.827322,"y":-0.023928227,"z":-0.009571291},`), 24)}
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = AppendJSONFrame(buf[:0], Notification, 3, content)
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkDecode(b *testing.B) {
	stream := frames(100)
	d := NewDecoder(0)
	n := 0
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		d.Feed(stream, func(Frame) { n++ })
	}
}

// maxWorkPerByte bounds the bytes a Decoder examines per byte of input:
// copying it in, the search for magic bytes, the running checksum, the
// search while deciding, compaction, and up to two header reads (12 bytes
// each) for each magic pair.
const maxWorkPerByte = 40

// overlappingHeaders is the input that costs the most per byte: a good
// header every 6 bytes (the closest good headers can follow each other),
// each claiming a payload of 65281 bytes, so that every byte is inside
// thousands of candidate frames, none of which is valid. A decoder that
// checks each candidate over its own bytes does 10,000 times the work of
// reading the input.
func overlappingHeaders(n int) []byte {
	return bytes.Repeat([]byte{Magic0, Magic1, Version, 0xFF, 0x00, 0x00}, n/6)
}

// worstInputs are the inputs of the decoder benchmark and of the linear
// work test: the overlapping headers, magic pairs in a row (the most
// header checks per byte), magic bytes alone, and frames broken in their
// last byte.
func worstInputs(n int) map[string][]byte {
	broken := frames(n / 40)
	for i := 0; i < len(broken); i++ {
		if broken[i] == '}' {
			broken[i] = ']'
		}
	}
	return map[string][]byte{
		"overlapping-headers": overlappingHeaders(n),
		"magic-pairs":         bytes.Repeat([]byte{Magic0, Magic1}, n/2),
		"magic-bytes":         bytes.Repeat([]byte{Magic0}, n),
		"broken-frames":       broken,
		"valid-frames":        frames(n / 40),
	}
}

func TestDecoderWorkIsLinear(t *testing.T) {
	for name, in := range worstInputs(1 << 18) {
		for _, step := range []int{len(in), 4096, 7} {
			d := NewDecoder(0)
			d.maxTurns = maxTurnsPerByte * uint64(len(in))
			for i := 0; i < len(in); i += step {
				d.Feed(in[i:min(i+step, len(in))], func(Frame) {})
			}
			if per := float64(d.work) / float64(len(in)); per > maxWorkPerByte {
				t.Errorf("%s in pieces of %d: %.1f bytes examined per byte of input, more than %d", name, step, per, maxWorkPerByte)
			}
		}
	}
	// the overlapping headers are no frames and each of them is broken
	d := NewDecoder(0)
	in := overlappingHeaders(1 << 18)
	d.Feed(in, func(f Frame) { t.Errorf("a frame in overlapping headers: %+v", f) })
	d.Feed(make([]byte, 70000), nil)
	if d.Broken != uint64(len(in)/6) {
		t.Errorf("%d broken frames, want %d", d.Broken, len(in)/6)
	}
}

// BenchmarkDecodeWorst decodes 1 MiB of each input of worstInputs, fed in
// pieces of 8 KiB as the transports read it.
func BenchmarkDecodeWorst(b *testing.B) {
	for name, in := range worstInputs(1 << 20) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				d := NewDecoder(0)
				for i := 0; i < len(in); i += 8192 {
					d.Feed(in[i:min(i+8192, len(in))], func(Frame) {})
				}
			}
		})
	}
}

func FuzzDecoder(f *testing.F) {
	f.Add(frames(2), 1)
	f.Add(append([]byte("\xa5\x5a\x01\x10\x00\x00\x00\x00\xff\xff\xff\xff"), frames(1)...), 3)
	f.Add([]byte("\xa5\xa5\x5a"), 2)
	f.Add(append(overlappingHeaders(600), frames(3)...), 5)
	f.Add(append(AppendFrame(nil, Ping, 1, nil)[:14], frames(2)...), 1)
	f.Fuzz(func(t *testing.T, data []byte, step int) {
		if step < 1 {
			step = 1
		}
		d := NewDecoder(4096)
		d.maxTurns = maxTurnsPerByte*uint64(len(data)) + 64
		whole := decodeAll(d, data)
		var chunks [][]byte
		for i := 0; i < len(data); i += step {
			chunks = append(chunks, data[i:min(i+step, len(data))])
		}
		ds := NewDecoder(4096)
		ds.maxTurns = d.maxTurns
		split := decodeAll(ds, chunks...)
		if fmt.Sprint(whole) != fmt.Sprint(split) {
			t.Fatalf("whole %v, in pieces of %d %v", whole, step, split)
		}
		// the work per byte of input stays under a constant
		for _, d := range []*Decoder{d, ds} {
			if d.work > maxWorkPerByte*uint64(len(data))+64 {
				t.Fatalf("%d bytes examined for %d bytes of input", d.work, len(data))
			}
		}
		// the same frames as a decoder that rescans after each broken frame
		ref := newRefDecoder(4096)
		var want []got
		ref.Feed(data, func(f Frame) { want = append(want, got{f.Kind, f.ID, string(f.Payload)}) })
		if fmt.Sprint(whole) != fmt.Sprint(want) || d.Broken != ref.Broken || d.Skipped != ref.Skipped {
			t.Fatalf("got %v (broken %d, skipped %d), the rescanning decoder %v (broken %d, skipped %d)",
				whole, d.Broken, d.Skipped, want, ref.Broken, ref.Skipped)
		}
		// every frame found encodes back to bytes that are in the input
		for _, g := range whole {
			enc := AppendFrame(nil, g.Kind, g.ID, []byte(g.Payload))
			if !bytes.Contains(data, enc) {
				t.Fatalf("frame %v is not in the input", g)
			}
		}
	})
}

func FuzzDecodeParam(f *testing.F) {
	f.Add("uint8", []byte("7"))
	f.Add("AccConfig", []byte(`{"GRange":8}`))
	f.Add("", []byte(`[1,2]`))
	f.Add("string", []byte(`"x"`))
	f.Fuzz(func(t *testing.T, typ string, value []byte) {
		v, err := DecodeParam(Param{Type: typ, Value: value})
		if err != nil {
			return
		}
		back, err := DecodeParam(EncodeParam(v))
		if err != nil || !back.Equal(v) {
			t.Fatalf("%s %q: round trip %v -> %v (%v)", typ, value, v, back, err)
		}
	})
}

func TestShift(t *testing.T) {
	data := []byte("123456789 and some more bytes to checksum")
	for _, n := range []int{0, 1, 7, 100, MaxPayload + HeaderSize + 5} {
		// the checksum of data followed by n zero bytes, two ways
		want := crc32.Checksum(append(append([]byte(nil), data...), make([]byte, n)...), castagnoli)
		raw := ^crc32.Update(0, castagnoli, data) // the register after data, from the usual start
		if got := ^shift(raw, uint64(n)); got != want {
			t.Errorf("%d zero bytes: %08x, want %08x", n, got, want)
		}
	}
}
