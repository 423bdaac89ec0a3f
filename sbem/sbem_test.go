package sbem

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

var imu9 = &Layout{
	Stream: "MeasIMU9",
	Fixed:  []Field{{"Timestamp", Uint32, ""}},
	Arrays: []Array{
		{"ArrayAcc", []Field{{"x", Float32, ""}, {"y", Float32, ""}, {"z", Float32, ""}}},
		{"ArrayGyro", []Field{{"x", Float32, ""}, {"y", Float32, ""}, {"z", Float32, ""}}},
		{"ArrayMagn", []Field{{"x", Float32, ""}, {"y", Float32, ""}, {"z", Float32, ""}}},
	},
}

var ecgMV = &Layout{
	Stream: "MeasECGmV",
	Fixed:  []Field{{"Timestamp", Uint32, ""}},
	Arrays: []Array{{"Samples", []Field{{"", Int16, "x*0.001,roundf(MIN(+32.767f,MAX(y,-32.767f))*1000.0f)"}}}},
}

func floats(ts uint32, vs ...float32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, ts)
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func TestWriteDecode(t *testing.T) {
	w := NewWriter()
	file := []byte(Header)
	var err error
	vals := make([]float32, 36)
	for i := range vals {
		vals[i] = float32(i) / 4
	}
	if file, err = w.AppendRecord(file, imu9, 4, floats(100, vals...)); err != nil {
		t.Fatal(err)
	}
	if file, err = w.AppendRecord(file, imu9, 1, floats(200, vals[:9]...)); err != nil {
		t.Fatal(err)
	}
	ecg := binary.LittleEndian.AppendUint32(nil, 300)
	for _, s := range []int16{-1, 2000, -32767} {
		ecg = binary.LittleEndian.AppendUint16(ecg, uint16(s))
	}
	if file, err = w.AppendRecord(file, ecgMV, 3, ecg); err != nil {
		t.Fatal(err)
	}
	if _, err = w.AppendRecord(file, ecgMV, 4, ecg); !errors.Is(err, ErrChunk) {
		t.Errorf("a payload of the wrong size: %v", err)
	}
	chunks, _, err := Chunks(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if c.ID >= SafeMax || len(c.Data) >= SafeMax {
			t.Errorf("chunk id %d, length %d: not below 0xAD", c.ID, len(c.Data))
		}
	}
	recs, err := Decode(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || len(recs[0].Values) != 37 || len(recs[1].Values) != 10 || len(recs[2].Values) != 4 {
		t.Fatalf("records %+v", recs)
	}
	if v := recs[0].Values; v[0] != (Value{"MeasIMU9.Timestamp", 100}) || v[1] != (Value{"MeasIMU9.ArrayAcc.x", 0}) ||
		v[5] != (Value{"MeasIMU9.ArrayAcc.y", 1}) || v[13] != (Value{"MeasIMU9.ArrayGyro.x", 3}) {
		t.Errorf("IMU9 values %+v", v[:14])
	}
	if v := recs[2].Values; v[1].Path != "MeasECGmV.Samples" || v[1].Value != -0.001 || v[2].Value != 2 {
		t.Errorf("ECG values %+v, want millivolts by the <MOD> factor", v)
	}
	// A torn end: the chunks before it survive, n says where to cut.
	got, n, err := Chunks(file[:len(file)-2])
	if !errors.Is(err, ErrTruncated) || len(got) != len(chunks)-1 || n != len(file)-len(ecg)-2 {
		t.Errorf("torn file: %d chunks, n %d, err %v", len(got), n, err)
	}
	if _, _, err := Chunks([]byte("NOTSBEM!")); !errors.Is(err, ErrHeader) {
		t.Errorf("bad header: %v", err)
	}
}

func TestWideIDsAndLengths(t *testing.T) {
	data := bytes.Repeat([]byte{7}, 300)
	b := AppendChunk([]byte(Header), 1000, data)
	c, _, err := Chunks(b)
	if err != nil || len(c) != 1 || c[0].ID != 1000 || !bytes.Equal(c[0].Data, data) {
		t.Fatalf("wide chunk: %v %v", c, err)
	}
}

// FuzzChunks: any bytes parse without a crash, and the chunks found write
// back to bytes that parse to the same chunks.
func FuzzChunks(f *testing.F) {
	w := NewWriter()
	seed, _ := w.AppendRecord([]byte(Header), imu9, 1, floats(1, 1, 2, 3, 4, 5, 6, 7, 8, 9))
	f.Add(seed)
	f.Add([]byte(Header + "\xff\x01\x00\x02ab"))
	f.Fuzz(func(t *testing.T, b []byte) {
		chunks, n, err := Chunks(b)
		if err != nil && !errors.Is(err, ErrHeader) && !errors.Is(err, ErrTruncated) {
			t.Fatal(err)
		}
		if n > len(b) {
			t.Fatalf("n %d beyond %d bytes", n, len(b))
		}
		out := []byte(Header)
		for _, c := range chunks {
			out = AppendChunk(out, c.ID, c.Data)
		}
		again, _, err := Chunks(out)
		if err != nil || len(again) != len(chunks) {
			t.Fatalf("re-encoded: %d chunks of %d, %v", len(again), len(chunks), err)
		}
		for i := range again {
			if again[i].ID != chunks[i].ID || !bytes.Equal(again[i].Data, chunks[i].Data) {
				t.Fatalf("chunk %d differs", i)
			}
		}
		Decode(b) // must not crash
	})
}

// FuzzRoundTrip: records written by the Writer decode to the values they
// were written from.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint32(1), []byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Fuzz(func(t *testing.T, ts uint32, raw []byte) {
		n := min(len(raw)/2, 16)
		data := binary.LittleEndian.AppendUint32(nil, ts)
		data = append(data, raw[:2*n]...)
		file, err := NewWriter().AppendRecord([]byte(Header), ecgMV, n, data)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := Decode(file)
		if err != nil || len(recs) != 1 || len(recs[0].Values) != n+1 {
			t.Fatalf("decoded %+v, %v", recs, err)
		}
		if recs[0].Values[0].Value != float64(ts) {
			t.Fatalf("timestamp %v, want %d", recs[0].Values[0].Value, ts)
		}
		for i := range n {
			want := float64(int16(binary.LittleEndian.Uint16(raw[2*i:]))) * 0.001
			if recs[0].Values[i+1].Value != want {
				t.Fatalf("sample %d: %v, want %v", i, recs[0].Values[i+1].Value, want)
			}
		}
	})
}
