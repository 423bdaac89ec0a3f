package content

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"senseboard/internal/needs"
	"senseboard/resource"
	"senseboard/sensor"
)

// fixturePath is the validation fixture of real sensor bytes with their
// decoded values, in the team's shared data directory.
func fixturePath(t *testing.T) string {
	return needs.Data(t, "movesense/sensein_movesense-py/validation_fixture.json")
}

type fixtureXYZ struct{ X, Y, Z float64 }

type fixtureEntry struct {
	Timestamp uint32
	Samples   []float64
	ArrayAcc  []fixtureXYZ
	ArrayGyro []fixtureXYZ
	ArrayMagn []fixtureXYZ
}

type fixture struct {
	Channels map[string]struct {
		PacketHex string        `json:"packet_hex"`
		JSONEntry *fixtureEntry `json:"json_entry"`
	} `json:"channels"`
}

func xyzs(v []fixtureXYZ) []sensor.XYZ {
	var out []sensor.XYZ
	for _, s := range v {
		out = append(out, sensor.XYZ{X: float32(s.X), Y: float32(s.Y), Z: float32(s.Z)})
	}
	return out
}

// contentOf builds the device's notification content for a fixture entry.
func contentOf(path string, e *fixtureEntry) any {
	if strings.Contains(strings.ToLower(path), "/ecg/") {
		mv := &ECGDataMV{Timestamp: e.Timestamp}
		for _, s := range e.Samples {
			mv.Samples = append(mv.Samples, float32(s))
		}
		return mv
	}
	return &MotionData{Timestamp: e.Timestamp, ArrayAcc: xyzs(e.ArrayAcc), ArrayGyro: xyzs(e.ArrayGyro), ArrayMagn: xyzs(e.ArrayMagn)}
}

// TestFixtureBytes reproduces the real sensor's bytes from their decoded
// values, for every stream of the fixture that has decoded values.
func TestFixtureBytes(t *testing.T) {
	raw, err := os.ReadFile(fixturePath(t))
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, ch := range f.Channels {
		if ch.JSONEntry == nil {
			continue
		}
		t.Run(path, func(t *testing.T) {
			got, err := Append(nil, contentOf(path, ch.JSONEntry))
			if err != nil {
				t.Fatal(err)
			}
			if h := hex.EncodeToString(got); h != ch.PacketHex {
				t.Errorf("encoded\n%s\nwant\n%s", h, ch.PacketHex)
			}
		})
		n++
	}
	if n < 6 {
		t.Errorf("fixture has %d decoded streams, want the 6 of ECG, Acc, Gyro, Magn, IMU6, IMU9", n)
	}
	// Temp and HR come without decoded values: their bytes must read as
	// plausible values in the layouts Append writes, and re-encode
	// to the same bytes. The fixture's Temp has the Measurement first, the
	// order movesense-py reads (binary.tempOrder measurementFirst).
	for _, tc := range []struct {
		path    string
		layout  Layout
		decode  func([]byte) (any, error)
		plausib func(any) bool
	}{
		{"/Meas/Temp", Layout{TempMeasurementFirst: true}, func(b []byte) (any, error) {
			if len(b) != 8 {
				return nil, errors.New("length")
			}
			return &TempData{Measurement: math.Float32frombits(binary.LittleEndian.Uint32(b)), Timestamp: binary.LittleEndian.Uint32(b[4:])}, nil
		}, func(c any) bool {
			d := c.(*TempData)
			return d.Measurement > 233 && d.Measurement < 398 && d.Timestamp > 172460 // taken after the IMU batch
		}},
		{"/Meas/HR", Layout{}, func(b []byte) (any, error) {
			if len(b) < 4 || len(b)%2 != 0 {
				return nil, errors.New("length")
			}
			d := &HRData{Average: math.Float32frombits(binary.LittleEndian.Uint32(b))}
			for i := 4; i < len(b); i += 2 {
				d.RRData = append(d.RRData, binary.LittleEndian.Uint16(b[i:]))
			}
			return d, nil
		}, func(c any) bool {
			d := c.(*HRData)
			ok := d.Average > 30 && d.Average < 220 && len(d.RRData) > 0
			for _, rr := range d.RRData {
				ok = ok && rr > 270 && rr < 2000
			}
			return ok
		}},
	} {
		ch, ok := f.Channels[tc.path]
		if !ok {
			continue
		}
		b, _ := hex.DecodeString(ch.PacketHex)
		c, err := tc.decode(b)
		if err != nil {
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		if !tc.plausib(c) {
			t.Errorf("%s: bytes %s read as implausible %+v", tc.path, ch.PacketHex, c)
		}
		if got, _ := tc.layout.Append(nil, c); hex.EncodeToString(got) != ch.PacketHex {
			t.Errorf("%s: re-encoded %x, want %s", tc.path, got, ch.PacketHex)
		}
	}
}

func TestAppendPayload(t *testing.T) {
	type entry struct {
		ID   uint32
		Mod  uint32
		Size uint64
	}
	type list struct{ Elements []entry }
	type info struct {
		Rates  []uint16
		Name   string
		Ok     bool
		Absent *uint32
	}
	for _, tc := range []struct {
		name    string
		content any
		want    string
	}{
		{"uint8 value", resource.Uint8(87), "57"},
		{"ecg raw", &ECGData{Timestamp: 1, Samples: []int32{-1, 2}}, "01000000" + "ffffffff" + "02000000"},
		{"ecg mV clamps", &ECGDataMV{Timestamp: 2, Samples: []float32{40, -40, 0.0015}}, "02000000" + "ff7f" + "0180" + "0200"},
		{"hr", &HRData{Average: 60, RRData: []uint16{1000}}, "00007042" + "e803"},
		{"temp", &TempData{Timestamp: 5, Measurement: 300}, "05000000" + "00009643"},
		{"count-prefixed arrays", &list{Elements: []entry{{1, 2, 3}}}, "01" + "01000000" + "02000000" + "0300000000000000"},
		{"strings and bool, absent optional", info{Rates: []uint16{13, 26}, Name: "ab", Ok: true}, "02" + "0d00" + "1a00" + "616200" + "01"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Append(nil, tc.content)
			if err != nil {
				t.Fatal(err)
			}
			if h := hex.EncodeToString(got); h != tc.want {
				t.Errorf("got %s, want %s", h, tc.want)
			}
		})
	}
	if _, err := Append(nil, map[string]int{"a": 1}); !errors.Is(err, ErrUnencodable) {
		t.Errorf("map: err %v, want ErrUnencodable", err)
	}
}

// Size is the length of what Append appends for a stream's notification,
// and -1 for other content.
func TestSize(t *testing.T) {
	m := NewMotionData(1, 3, true, false, true)
	for _, c := range []any{
		m, NewMotionData(2, 1, false, true, false), &MotionData{},
		NewECGData(3, 5), NewECGDataMV(4, 7), NewHRData(60, 1000), &HRData{RRData: []uint16{1, 2, 3}},
		&TempData{}, TempData{},
	} {
		b, err := Append(nil, c)
		if err != nil {
			t.Fatal(err)
		}
		if got := Size(c); got != len(b) {
			t.Errorf("Size(%T %v) = %d, Append appends %d", c, c, got, len(b))
		}
	}
	for _, c := range []any{resource.Uint8(1), &AccInfo{}, nil} {
		if got := Size(c); got != -1 {
			t.Errorf("Size(%T) = %d, want -1", c, got)
		}
	}
}

// An array with more elements than its uint8 count can say is refused,
// naming it; one of MaxArray elements is encoded whole.
func TestAppendArrayLimit(t *testing.T) {
	type entry struct{ Rates []uint16 }
	type list struct{ Elements []entry }
	many := make([]uint16, MaxArray+1)
	floats := make([]float32, MaxArray+1)
	for _, tc := range []struct {
		name    string
		content any
		want    string // in the error; "" for none
		size    int    // bytes when encoded
	}{
		{"a field at the limit", &struct{ Rates []uint16 }{many[:MaxArray]}, "", 1 + 2*MaxArray},
		{"a field over it", &struct{ Rates []uint16 }{many}, "Rates has 256 elements, at most 255", 0},
		{"the content over it", many, "the content has 256 elements", 0},
		{"an array in an element", &list{Elements: []entry{{Rates: many}}}, "Elements[].Rates has 256 elements", 0},
		{"Acc/Info ranges", &AccInfo{SampleRates: []uint16{13}, Ranges: many}, "Ranges has 256 elements", 0},
		{"IMU/Info", &IMUInfo{MagnRanges: many}, "MagnRanges has 256", 0},
		{"IMU/Info, the first too long", &IMUInfo{SampleRates: many, MagnRanges: many}, "SampleRates has 256", 0},
		{"ECG/Info high pass", &ECGInfo{HighPass: floats}, "HighPass has 256", 0},
		{"ECG/Info at the limit", &ECGInfo{LowPass: floats[:MaxArray]}, "", 1 + 2 + 1 + 2*MaxArray + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Append(nil, tc.content)
			if tc.want == "" {
				if err != nil || len(got) != tc.size {
					t.Errorf("%d bytes, err %v; want %d", len(got), err, tc.size)
				}
				return
			}
			if !errors.Is(err, ErrTooLong) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want ErrTooLong with %q", err, tc.want)
			}
		})
	}
}
