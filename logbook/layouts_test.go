package logbook_test

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"senseboard"
	"senseboard/internal/deforder"
	"senseboard/logbook"
	"senseboard/profile"
	"senseboard/resource"
	"senseboard/sbem"
	"senseboard/senseboardtest"
)

// logged logs paths (and /Time/Detailed) for 5 s on a device of profile p
// and returns each stream's first record as a reader that follows the
// log's descriptors decodes it: the fields, in the order of the record,
// and their values.
func logged(t *testing.T, p *profile.Profile, paths ...string) map[string]sbem.Record {
	t.Helper()
	d := senseboardtest.New(t, senseboard.Config{Profile: p})
	d.Expect(200, resource.Put, "/Mem/DataLogger/Config", config(t, append(paths, "/Time/Detailed")...))
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
	for range 50 {
		d.Advance(100 * time.Millisecond)
	}
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateReady))
	recs, err := sbem.Decode(logBytes(t, d, entries(t, d)[0].ID))
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]sbem.Record{}
	for _, r := range recs {
		stream, _, _ := strings.Cut(r.Values[0].Path, ".")
		if _, ok := first[stream]; !ok {
			first[stream] = r
		}
	}
	return first
}

// fields returns the fields of a record in their order: MeasIMU9.ArrayAcc.x
// counts as ArrayAcc, once however many samples follow.
func fields(r sbem.Record) []string {
	var out []string
	for _, v := range r.Values {
		parts := strings.Split(v.Path, ".")
		if f := parts[1]; len(out) == 0 || out[len(out)-1] != f {
			out = append(out, f)
		}
	}
	return out
}

// TestSBEMLayoutsFollowDefinitions holds the field order of every stream
// the data logger writes, as its descriptors give it, against the
// stream's definition. The exceptions are docs/gsp.md's: the ECG streams
// put the Timestamp first (as their GSP form does); TimeDetailed has
// relativeTime before utcTime, as a real Movesense Flash log has it
// (Commander's ecg-flash-log.sbem and docs/sbem-format.md); and MeasTemp
// follows binary.tempOrder.
func TestSBEMLayoutsFollowDefinitions(t *testing.T) {
	first := logged(t, nil, "/Meas/Acc/52", "/Meas/Gyro/52", "/Meas/Magn/13", "/Meas/IMU6/52", "/Meas/IMU6m/52", "/Meas/IMU9/52",
		"/Meas/ECG/200", "/Meas/ECG/200/mV")
	maps.Copy(first, logged(t, nil, "/Meas/HR", "/Meas/Temp"))
	p := profile.Default()
	p.Binary.TempOrder = profile.TempMeasurementFirst
	flipped := logged(t, p, "/Meas/Temp")["MeasTemp"]
	for _, tc := range []struct {
		stream, def string
		rec         sbem.Record
		want        []string
		exception   string
	}{
		{"MeasAcc", "AccData", first["MeasAcc"], []string{"Timestamp", "ArrayAcc"}, ""},
		{"MeasGyro", "GyroData", first["MeasGyro"], []string{"Timestamp", "ArrayGyro"}, ""},
		{"MeasMagn", "MagnData", first["MeasMagn"], []string{"Timestamp", "ArrayMagn"}, ""},
		{"MeasIMU6", "IMU6Data", first["MeasIMU6"], []string{"Timestamp", "ArrayAcc", "ArrayGyro"}, ""},
		{"MeasIMU6m", "IMU6mData", first["MeasIMU6m"], []string{"Timestamp", "ArrayAcc", "ArrayMagn"}, ""},
		{"MeasIMU9", "IMU9Data", first["MeasIMU9"], []string{"Timestamp", "ArrayAcc", "ArrayGyro", "ArrayMagn"}, ""},
		{"MeasECG", "ECGData", first["MeasECG"], []string{"Timestamp", "Samples"}, "Timestamp first, as on GSP"},
		{"MeasECGmV", "ECGDataMV", first["MeasECGmV"], []string{"Timestamp", "Samples"}, "Timestamp first, as a Flash log has it"},
		{"MeasHR", "HRData", first["MeasHR"], []string{"average", "rrData"}, ""},
		{"MeasTemp", "TemperatureValue", first["MeasTemp"], []string{"Timestamp", "Measurement"}, ""},
		{"MeasTemp", "TemperatureValue", flipped, []string{"Measurement", "Timestamp"}, "binary.tempOrder measurementFirst"},
		{"TimeDetailed", "TimeSync", first["TimeDetailed"], []string{"relativeTime", "utcTime"}, "relativeTime first, as a Flash log has it"},
	} {
		if len(tc.rec.Values) == 0 {
			t.Errorf("%s: no record in 5 s", tc.stream)
			continue
		}
		if got := fields(tc.rec); !slices.Equal(got, tc.want) {
			t.Errorf("%s: fields %v, want %v", tc.stream, got, tc.want)
		}
		props, _, err := deforder.Of(tc.def)
		if err != nil {
			t.Fatal(err)
		}
		switch same := slices.Equal(tc.want, deforder.Names(props)); {
		case tc.exception == "" && !same:
			t.Errorf("%s: %v, %s's definition %v; an exception must be listed in docs/gsp.md", tc.stream, tc.want, tc.def, deforder.Names(props))
		case tc.exception != "" && same:
			t.Errorf("%s: the definition's order %v; the exception %q is no longer one", tc.stream, tc.want, tc.exception)
		}
	}
	// A reader that follows the descriptors reads the same temperature in
	// either order.
	value := func(r sbem.Record, name string) float64 {
		for _, v := range r.Values {
			if v.Path == "MeasTemp."+name {
				return v.Value
			}
		}
		return -1
	}
	for _, name := range []string{"Timestamp", "Measurement"} {
		if a, b := value(first["MeasTemp"], name), value(flipped, name); a != b || a <= 0 {
			t.Errorf("MeasTemp %s: %v in the definition's order, %v measurement first", name, a, b)
		}
	}
}
