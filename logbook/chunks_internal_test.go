package logbook

import (
	"math"
	"testing"

	"senseboard/content"
	"senseboard/sbem"
)

// A motion stream's SBEM name and rate come from its path.
func TestStreamName(t *testing.T) {
	for _, tt := range []struct {
		uri  string
		name string
		rate float64
	}{
		{"/Meas/IMU9/208", "MeasIMU9", 208},
		{"Meas/Acc/52/", "MeasAcc", 52},
		{"/Meas/Gyro", "MeasGyro", 0},
		{"/Meas", "", 0},
		{"/Other/Meas/Magn/13", "MeasMagn", 13},
	} {
		if name, rate := streamName(tt.uri); name != tt.name || rate != tt.rate {
			t.Errorf("streamName(%q) = %q, %v; want %q, %v", tt.uri, name, rate, tt.name, tt.rate)
		}
	}
}

// A motion notification goes in chunks as large as stay below the SBEM
// escape, in order, each stamped with the time of its first sample.
func TestChunksOfSplits(t *testing.T) {
	per := (maxChunk - 4) / (3 * 12) // samples of three arrays that fit
	for _, tt := range []struct {
		uri string
		n   int      // samples
		ts  []uint32 // of each chunk
	}{
		{"/Meas/IMU9/208", 6, []uint32{1000, 1000 + uint32(per*1000/208)}},
		{"/Meas/IMU9", 6, []uint32{1000, 1000}},
		{"/Meas/IMU9/208", per, []uint32{1000}},
		{"/Meas/IMU9/208", 2 * per, []uint32{1000, 1000 + uint32(per*1000/208)}},
	} {
		m := content.NewMotionData(1000, tt.n, true, true, true)
		for i := range tt.n {
			m.ArrayAcc[i].X, m.ArrayGyro[i].X, m.ArrayMagn[i].X = float32(i), float32(10+i), float32(20+i)
		}
		chunks := chunksOf(tt.uri, m, content.Layout{})
		if len(chunks) != len(tt.ts) {
			t.Fatalf("%s, %d samples: %d chunks, want %d", tt.uri, tt.n, len(chunks), len(tt.ts))
		}
		off := 0
		for i, c := range chunks {
			want := min(per, tt.n-off)
			part := content.NewMotionData(tt.ts[i], want, true, true, true)
			copy(part.ArrayAcc, m.ArrayAcc[off:])
			copy(part.ArrayGyro, m.ArrayGyro[off:])
			copy(part.ArrayMagn, m.ArrayMagn[off:])
			data, _ := content.Append(nil, part)
			if c.n != want || string(c.data) != string(data) || len(c.data) >= maxChunk+1 {
				t.Errorf("%s: chunk %d of %d samples, % x; want %d, % x", tt.uri, i, c.n, c.data, want, data)
			}
			off += c.n
		}
	}
}

// A stream's notifications may wait WriteStall's worth at the rate its
// path names, and its losses are named as its records are.
func TestWaitAndLossName(t *testing.T) {
	for _, tt := range []struct {
		uri  string
		wait int
		name string
	}{
		{"/Meas/ECG/500/mV", 63, "MeasECGmV"},
		{"/Meas/ECG/125", 16, "MeasECG"},
		{"/Meas/IMU9/208", 416, "MeasIMU9"},
		{"/Meas/Acc/13", 26, "MeasAcc"},
		{"/Meas/HR", 32, "MeasHR"},
		{"/Meas/Temp", 32, "MeasTemp"},
		{"/Sample/JumpCount", 32, "SampleJumpCount"},
	} {
		if got := waitFor(tt.uri); got != tt.wait {
			t.Errorf("waitFor(%q) = %d, want %d", tt.uri, got, tt.wait)
		}
		if got := sbemName(tt.uri); got != tt.name {
			t.Errorf("sbemName(%q) = %q, want %q", tt.uri, got, tt.name)
		}
	}
}

// A log's time, as it records it: the UTC second of its /Time/Detailed
// record moved on to its newest timestamp, across the device time's wrap;
// 0 with no such record.
func TestRecordedTime(t *testing.T) {
	const utc = 1_700_000_000_250_000 // µs
	anchor := func(rel uint32) any { return &content.DetailedTime{UTCTime: utc, RelativeTime: rel} }
	temp := func(ts uint32) any { return &content.TempData{Timestamp: ts, Measurement: 300} }
	for _, tt := range []struct {
		name string
		recs []any
		want uint32
	}{
		{"no records", nil, 0},
		{"no /Time/Detailed", []any{temp(5000), temp(9000)}, 0},
		{"only /Time/Detailed", []any{anchor(1000)}, 1_700_000_000},
		{"data after it", []any{anchor(1000), temp(2000), temp(4800), temp(3000)}, 1_700_000_004},
		{"data before it", []any{temp(900_000), anchor(1000), temp(1500)}, 1_700_000_000},
		{"a timestamp before the start", []any{anchor(1000), temp(900), temp(2800)}, 1_700_000_002},
		{"across the wrap", []any{anchor(math.MaxUint32 - 999), temp(math.MaxUint32), temp(9_000)}, 1_700_000_010},
		{"the first /Time/Detailed", []any{anchor(1000), temp(3000), &content.DetailedTime{UTCTime: 2 * utc, RelativeTime: 3000}}, 1_700_000_002},
	} {
		w := sbem.NewWriter()
		data := []byte(sbem.Header)
		for _, r := range tt.recs {
			for _, c := range chunksOf("/Meas/Temp", r, content.Layout{}) {
				var err error
				if data, err = w.AppendRecord(data, c.layout, c.n, c.data); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got := recordedTime(data); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}
