package content_test

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"slices"
	"strings"
	"testing"

	"senseboard/content"
	"senseboard/internal/deforder"
	"senseboard/sensor"
)

// TestLayoutsFollowDefinitions pins the field order of every binary layout
// that Append writes other than by reflection (whose order is the Go
// type's, checked against the definitions by gsp's TestGetLayoutsFollowDefinitions),
// byte for byte with a distinct value in each field, and holds it against
// the definitions: senseboard's own (package api) and, where the family's
// device library defines the record, the family's (its
// movesense-api/meas/*.yaml and time.yaml, as recorded here). A layout
// whose order is not the definition's is an exception that docs/gsp.md
// lists with its evidence; an exception whose order became the
// definition's fails too, so that the list stays true.
func TestLayoutsFollowDefinitions(t *testing.T) {
	xyz := func(f float32) []sensor.XYZ { return []sensor.XYZ{{X: f, Y: f, Z: f}} }
	// the hex of one xyz sample of 1, 2 or 3
	x1, x2, x3 := strings.Repeat("0000803f", 3), strings.Repeat("00000040", 3), strings.Repeat("00004040", 3)
	lp, hp := float32(40), float32(0.5)
	measurementFirst := content.Layout{TempMeasurementFirst: true}
	for _, tc := range []struct {
		def       string
		family    []string // the family's definition order; nil where the family's library has no such record
		layout    content.Layout
		content   any
		hex       string   // field by field, in wire order
		wire      []string // the fields in the order of hex
		exception string   // why wire is not the definition's order (docs/gsp.md); "" when it is
	}{
		{"TemperatureValue", []string{"Timestamp", "Measurement"}, content.Layout{},
			&content.TempData{Timestamp: 0x01020304, Measurement: 2}, "04030201" + "00000040", []string{"Timestamp", "Measurement"}, ""},
		{"TemperatureValue", []string{"Timestamp", "Measurement"}, measurementFirst,
			&content.TempData{Timestamp: 0x01020304, Measurement: 2}, "00000040" + "04030201", []string{"Measurement", "Timestamp"},
			"binary.tempOrder measurementFirst: movesense-py reads the Measurement at 0"},
		{"ECGData", []string{"Samples", "Timestamp"}, content.Layout{},
			&content.ECGData{Timestamp: 0x01020304, Samples: []int32{-2}}, "04030201" + "feffffff", []string{"Timestamp", "Samples"},
			"the sensors send the Timestamp first (Commander's verified 68-byte layout)"},
		{"ECGDataMV", nil, content.Layout{},
			&content.ECGDataMV{Timestamp: 0x01020304, Samples: []float32{-0.002}}, "04030201" + "feff", []string{"Timestamp", "Samples"},
			"the sensors send the Timestamp first (movesense-py's fixture, Commander's capture)"},
		{"HRData", []string{"average", "rrData"}, content.Layout{},
			&content.HRData{Average: 2, RRData: []uint16{0x0102}}, "00000040" + "0201", []string{"average", "rrData"}, ""},
		{"AccData", []string{"Timestamp", "ArrayAcc"}, content.Layout{},
			&content.MotionData{Timestamp: 0x01020304, ArrayAcc: xyz(1)}, "04030201" + x1, []string{"Timestamp", "ArrayAcc"}, ""},
		{"GyroData", []string{"Timestamp", "ArrayGyro"}, content.Layout{},
			&content.MotionData{Timestamp: 0x01020304, ArrayGyro: xyz(2)}, "04030201" + x2, []string{"Timestamp", "ArrayGyro"}, ""},
		{"MagnData", []string{"Timestamp", "ArrayMagn"}, content.Layout{},
			&content.MotionData{Timestamp: 0x01020304, ArrayMagn: xyz(3)}, "04030201" + x3, []string{"Timestamp", "ArrayMagn"}, ""},
		{"IMU6Data", []string{"Timestamp", "ArrayAcc", "ArrayGyro"}, content.Layout{},
			&content.MotionData{Timestamp: 0x01020304, ArrayAcc: xyz(1), ArrayGyro: xyz(2)}, "04030201" + x1 + x2,
			[]string{"Timestamp", "ArrayAcc", "ArrayGyro"}, ""},
		{"IMU6mData", []string{"Timestamp", "ArrayAcc", "ArrayMagn"}, content.Layout{},
			&content.MotionData{Timestamp: 0x01020304, ArrayAcc: xyz(1), ArrayMagn: xyz(3)}, "04030201" + x1 + x3,
			[]string{"Timestamp", "ArrayAcc", "ArrayMagn"}, ""},
		{"IMU9Data", []string{"Timestamp", "ArrayAcc", "ArrayGyro", "ArrayMagn"}, content.Layout{},
			&content.MotionData{Timestamp: 0x01020304, ArrayAcc: xyz(1), ArrayGyro: xyz(2), ArrayMagn: xyz(3)}, "04030201" + x1 + x2 + x3,
			[]string{"Timestamp", "ArrayAcc", "ArrayGyro", "ArrayMagn"}, ""},
		{"AccInfo", []string{"SampleRates", "Ranges"}, content.Layout{},
			&content.AccInfo{SampleRates: []uint16{13}, Ranges: []uint16{2}}, "01" + "0d00" + "01" + "02", []string{"SampleRates", "Ranges"}, ""},
		{"IMUInfo", []string{"SampleRates", "AccRanges", "GyroRanges", "MagnRanges"}, content.Layout{},
			&content.IMUInfo{SampleRates: []uint16{13}, AccRanges: []uint16{2}, GyroRanges: []uint16{245}, MagnRanges: []uint16{5000}},
			"01" + "0d00" + "01" + "02" + "01" + "f500" + "01" + "8813", []string{"SampleRates", "AccRanges", "GyroRanges", "MagnRanges"}, ""},
		{"ECGInfo", []string{"CurrentSampleRate", "AvailableSampleRates", "ArraySize", "LowPass", "HighPass"}, content.Layout{},
			&content.ECGInfo{CurrentSampleRate: 200, AvailableSampleRates: []uint16{125}, ArraySize: 16, LowPass: []float32{40}, HighPass: []float32{0.5}},
			"c800" + "01" + "7d00" + "1000" + "01" + "2800" + "01" + "0000003f",
			[]string{"CurrentSampleRate", "AvailableSampleRates", "ArraySize", "LowPass", "HighPass"}, ""},
		{"ECGConfig", []string{"LowPass", "HighPass"}, content.Layout{},
			&content.ECGConfig{LowPass: &lp, HighPass: &hp}, "2800" + "0000003f", []string{"LowPass", "HighPass"}, ""},
		{"HRInfo", []string{"Min", "Max", "Accuracy"}, content.Layout{},
			&content.HRInfo{Min: 200, Max: 2000, Accuracy: 5}, "c800" + "d007" + "0000a040", []string{"Min", "Max", "Accuracy"}, ""},
		{"TempInfo", []string{"Min", "Max", "Accuracy"}, content.Layout{},
			&content.TempInfo{Min: 233, Max: 398, Accuracy: 1}, "e9000000" + "8e010000" + "0000803f", []string{"Min", "Max", "Accuracy"}, ""},
		{"DetailedTime", []string{"utcTime", "relativeTime", "tickRate", "accuracy"}, content.Layout{},
			&content.DetailedTime{UTCTime: 0x0102030405060708, RelativeTime: 9, TickRate: 1024, Accuracy: 20},
			"0807060504030201" + "09000000" + "00040000" + "14000000", []string{"utcTime", "relativeTime", "tickRate", "accuracy"}, ""},
	} {
		name := tc.def
		if tc.layout != (content.Layout{}) {
			name += ", " + tc.exception
		}
		t.Run(name, func(t *testing.T) {
			got, err := tc.layout.Append(nil, tc.content)
			if err != nil {
				t.Fatal(err)
			}
			if h := hex.EncodeToString(got); h != tc.hex {
				t.Errorf("encoded %s, want %s (%s)", h, tc.hex, strings.Join(tc.wire, ", "))
			}
			props, file, err := deforder.Of(tc.def)
			if err != nil {
				t.Fatal(err)
			}
			def := deforder.Names(props)
			if tc.family != nil && !slices.Equal(def, tc.family) {
				t.Errorf("%s lists %s in %s; the family's definition in %s", file, tc.def, def, tc.family)
			}
			switch same := slices.Equal(tc.wire, def); {
			case tc.exception == "" && !same:
				t.Errorf("the binary form has %v, %s's definition %v; an exception must be listed in docs/gsp.md", tc.wire, tc.def, def)
			case tc.exception != "" && same:
				t.Errorf("the binary form has the definition's order %v; the exception %q is no longer one", def, tc.exception)
			}
		})
	}
}

// unhex decodes the captures' spaced hex.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func f32(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }

// TestCommanderCaptures encodes the values that Movesense Commander
// decoded from payloads a current sensor (a Movesense Flash) sent over GSP
// (its src/lib/gsp/layouts.hardware.test.ts) and gets the sensor's bytes
// back, byte for byte; and decodes those bytes in the layouts docs/gsp.md
// gives into the values Commander reports.
func TestCommanderCaptures(t *testing.T) {
	t.Run("/Meas/Temp", func(t *testing.T) {
		b := unhex(t, "8e 61 02 00 33 c3 95 43")
		ts, k := binary.LittleEndian.Uint32(b), f32(b[4:])
		if ts != 156046 || math.Abs(float64(k)-299.525) > 0.001 {
			t.Fatalf("decoded Timestamp %d, Measurement %v K; Commander reads 156046 ms and 299.525 K", ts, k)
		}
		temp := &content.TempData{Timestamp: 156046, Measurement: k}
		if got, _ := content.Append(nil, temp); !slices.Equal(got, b) {
			t.Errorf("encoded % x, the sensor sent % x", got, b)
		}
		// the profile's other order puts the same values the other way round
		flipped, _ := content.Layout{TempMeasurementFirst: true}.Append(nil, temp)
		if want := append(slices.Clone(b[4:]), b[:4]...); !slices.Equal(flipped, want) {
			t.Errorf("measurementFirst: % x, want % x", flipped, want)
		}
	})
	t.Run("/Meas/HR", func(t *testing.T) {
		b := unhex(t, "83 c8 13 43 96 01")
		avg := f32(b)
		if math.Abs(float64(avg)-147.783) > 0.001 || binary.LittleEndian.Uint16(b[4:]) != 406 {
			t.Fatalf("decoded % x as %v bpm, RR %d", b, avg, binary.LittleEndian.Uint16(b[4:]))
		}
		if got, _ := content.Append(nil, content.NewHRData(avg, 406)); !slices.Equal(got, b) {
			t.Errorf("encoded % x, the sensor sent % x", got, b)
		}
	})
	t.Run("/Meas/ECG/200/mV", func(t *testing.T) {
		b := unhex(t, "c3 06 02 00 ba ff c5 ff c9 ff c5 ff c1 ff c2 ff c2 ff c2 ff c1 ff c1 ff c1 ff c6 ff cb ff d0 ff cf ff ca ff")
		e := content.NewECGDataMV(binary.LittleEndian.Uint32(b), 16)
		for i := range e.Samples {
			e.Samples[i] = float32(int16(binary.LittleEndian.Uint16(b[4+2*i:]))) / 1000
		}
		if e.Timestamp != 132803 || e.Samples[0] != -0.070 {
			t.Fatalf("decoded Timestamp %d, first sample %v mV; Commander reads 132803 and -70 µV", e.Timestamp, e.Samples[0])
		}
		if got, _ := content.Append(nil, e); !slices.Equal(got, b) {
			t.Errorf("encoded % x, the sensor sent % x", got, b)
		}
	})
	t.Run("/Meas/IMU9/52", func(t *testing.T) {
		b := unhex(t, "15 9e 01 00 5c 6e 61 bd 56 d2 9c bd 8c 2a 1d c1 ee 54 e6 bd cc d5 fe bc 8c 2a 1d c1 "+
			"c9 87 dc bd 31 05 13 bd 27 3e 1d c1 cc d5 fe bd ec 06 44 bd f7 a9 1d c1 "+
			"48 e1 fa 3f 8f c2 25 c0 c3 f5 68 3f 66 66 06 40 cd cc 1c c0 3e 0a 57 3f "+
			"85 eb 01 40 cd cc 1c c0 3e 0a 57 3f 66 66 06 40 ae 47 21 c0 b8 1e 45 3f "+
			"52 a8 6f 42 81 7b b0 c2 72 e8 5a 43 1b 6e 6a 42 f0 53 ac c2 4a dd 5a 43 "+
			"77 70 6d 42 04 ec b1 c2 db 61 59 43 35 90 6f 42 0b 7e b0 c2 d2 34 5a 43")
		m := content.NewMotionData(binary.LittleEndian.Uint32(b), 4, true, true, true)
		p := 4
		for _, a := range [][]sensor.XYZ{m.ArrayAcc, m.ArrayGyro, m.ArrayMagn} {
			for i := range a {
				a[i] = sensor.XYZ{X: f32(b[p:]), Y: f32(b[p+4:]), Z: f32(b[p+8:])}
				p += 12
			}
		}
		// the sensor lay still: gravity on the first block, the accelerometer's
		if m.Timestamp != 106005 || math.Abs(float64(m.ArrayAcc[0].Z)+9.82) > 0.05 {
			t.Fatalf("decoded Timestamp %d, first Acc %+v; Commander reads 106005 and gravity on z", m.Timestamp, m.ArrayAcc[0])
		}
		if got, _ := content.Append(nil, m); !slices.Equal(got, b) {
			t.Errorf("encoded % x, the sensor sent % x", got, b)
		}
	})
	lp, hp := float32(40), float32(0.5)
	for _, tc := range []struct {
		path, hex string
		content   any
	}{
		{"/Time/Detailed", "58 d8 97 e1 69 59 06 00 d0 89 24 00 00 04 00 00 14 00 00 00",
			&content.DetailedTime{UTCTime: 1787161151527000, RelativeTime: 2394576, TickRate: 1024, Accuracy: 20}},
		{"/Meas/Acc/Info", "08 0d 00 1a 00 34 00 68 00 d0 00 a0 01 41 03 82 06 04 02 04 08 10",
			&content.AccInfo{SampleRates: []uint16{13, 26, 52, 104, 208, 416, 833, 1666}, Ranges: []uint16{2, 4, 8, 16}}},
		{"/Meas/IMU/Info", "08 0d 00 1a 00 34 00 68 00 d0 00 a0 01 41 03 82 06 04 02 04 08 10 05 7d 00 f5 00 f4 01 e8 03 d0 07 01 88 13",
			&content.IMUInfo{SampleRates: []uint16{13, 26, 52, 104, 208, 416, 833, 1666}, AccRanges: []uint16{2, 4, 8, 16},
				GyroRanges: []uint16{125, 245, 500, 1000, 2000}, MagnRanges: []uint16{5000}}},
		{"/Meas/ECG/Info", "07 7d 00 80 00 c8 00 fa 00 00 01 f4 01 00 02 10 00 03 28 00 64 00 96 00 01 00 00 00 3f",
			&content.ECGInfo{AvailableSampleRates: []uint16{125, 128, 200, 250, 256, 500, 512}, ArraySize: 16,
				LowPass: []float32{40, 100, 150}, HighPass: []float32{0.5}}},
		{"/Meas/ECG/Config", "28 00 00 00 00 3f", &content.ECGConfig{LowPass: &lp, HighPass: &hp}},
		{"/Meas/Temp/Info", "e9 00 00 00 8e 01 00 00 00 00 80 3f", &content.TempInfo{Min: 233, Max: 398, Accuracy: 1}},
		{"/Meas/HR/Info", "c8 00 d0 07 00 00 a0 40", &content.HRInfo{Min: 200, Max: 2000, Accuracy: 5}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if got, err := content.Append(nil, tc.content); err != nil || !slices.Equal(got, unhex(t, tc.hex)) {
				t.Errorf("encoded % x (%v), the sensor sent %s", got, err, tc.hex)
			}
		})
	}
}
