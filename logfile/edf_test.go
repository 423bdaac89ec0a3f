package logfile_test

import (
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"senseboard"
	"senseboard/edf"
	"senseboard/internal/mnetest"
	"senseboard/logbook"
	"senseboard/logfile"
	"senseboard/record"
	"senseboard/resource"
	"senseboard/senseboardtest"
)

func config(t *testing.T, paths ...string) resource.Value {
	t.Helper()
	c := logbook.Config{DataEntries: logbook.DataEntries{DataEntry: []logbook.DataEntry{}}}
	for _, p := range paths {
		c.DataEntries.DataEntry = append(c.DataEntries.DataEntry, logbook.DataEntry{Path: p})
	}
	v, err := resource.Record("DataLoggerConfig", c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func recordLog(t *testing.T, seconds int, paths ...string) []byte {
	t.Helper()
	d := senseboardtest.New(t, senseboard.Config{})
	d.Expect(200, resource.Put, "/Time", resource.Int64(1_763_900_000_000_000))
	d.Expect(200, resource.Put, "/Mem/DataLogger/Config", config(t, paths...))
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
	for range seconds * 10 {
		d.Advance(100 * time.Millisecond)
	}
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateReady))
	env := d.Expect(200, resource.Get, "/Mem/Logbook/byId/{LogId}/Data", resource.Int32(1))
	return env.Content.(*logbook.LogData).Data
}

func TestEDF(t *testing.T) {
	f, err := logfile.EDF(recordLog(t, 6, "/Time/Detailed", "/Meas/ECG/200/mV", "/Meas/Acc/52", "/Meas/HR"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := edf.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	g, err := edf.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, s := range g.Signals {
		labels = append(labels, s.Label)
		secs := float64(len(s.Samples)) / s.Rate
		if secs < 5 || secs > 7.5 {
			t.Errorf("%s: %d samples at %g Hz, want about 6 s", s.Label, len(s.Samples), s.Rate)
		}
	}
	rates := map[string]float64{}
	for _, s := range g.Signals {
		rates[s.Label] = s.Rate
	}
	sorted := slices.Sorted(slices.Values(labels))
	if !slices.Equal(sorted, []string{"Acc x", "Acc y", "Acc z", "ECG"}) || rates["ECG"] != 200 || rates["Acc x"] != 52 {
		t.Errorf("signals %q, rates %v", labels, rates)
	}
	if got := g.Start.Unix(); got < 1_763_900_000 || got > 1_763_900_002 {
		t.Errorf("start %v, want the UTC time set before logging", g.Start)
	}
	hr := 0
	for _, a := range g.Annotations {
		if strings.HasPrefix(a.Text, "HR ") {
			hr++
		}
	}
	if hr < 3 {
		t.Errorf("%d heart rate annotations in 6 s", hr)
	}
	// The accelerometer at rest carries gravity.
	g2 := 0.0
	for _, s := range g.Signals {
		if strings.HasPrefix(s.Label, "Acc") {
			mean := 0.0
			for _, v := range s.Samples {
				mean += v / float64(len(s.Samples))
			}
			g2 += mean * mean
		}
	}
	if math.Abs(math.Sqrt(g2)-9.81) > 1 {
		t.Errorf("mean acceleration %.2f m/s2 at rest, want about 9.81", math.Sqrt(g2))
	}

	path := filepath.Join(t.TempDir(), "log.edf")
	if err := edf.WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	got := mnetest.Read(t, path)
	if !slices.Equal(got.Names, labels) || got.Seconds < 5 || got.Seconds > 7.5 || math.Abs(got.Start-float64(g.Start.Unix())) > 1 {
		t.Errorf("MNE read %+v", got)
	}
	if !slices.ContainsFunc(got.Texts, func(s string) bool { return strings.HasPrefix(s, "HR ") }) {
		t.Errorf("MNE found no heart rate annotation in %q", got.Texts)
	}
}

// A log and a recording of the same streams export alike: the same signals
// with the same labels, in the same units.
func TestEDFLabelsMatchRecording(t *testing.T) {
	streams := []string{"/Meas/IMU9/104", "/Meas/ECG/200/mV", "/Meas/Gyro/52"}
	logged, err := logfile.EDF(recordLog(t, 2, streams...))
	if err != nil {
		t.Fatal(err)
	}

	d := senseboardtest.New(t, senseboard.Config{})
	rec, err := record.New(filepath.Join(t.TempDir(), "rec.jsonl"), record.JSONL)
	if err != nil {
		t.Fatal(err)
	}
	var subs []*senseboardtest.Sub
	for _, p := range streams {
		subs = append(subs, d.SubscribeAll(p))
	}
	for range 2 {
		d.Advance(time.Second)
		for _, s := range subs {
			for _, e := range s.Events() {
				b, _ := resource.AppendJSON(nil, e.Content)
				if err := rec.Write(e.Sub.Topic.URI(), b); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	recorded, err := record.EDF(rec.Files())
	if err != nil {
		t.Fatal(err)
	}

	units := func(f *edf.File) map[string]string {
		m := map[string]string{}
		for _, s := range f.Signals {
			m[s.Label] = s.Unit
		}
		return m
	}
	lu, ru := units(logged), units(recorded)
	if !maps.Equal(lu, ru) {
		t.Errorf("the log exports %v, the recording %v", lu, ru)
	}
	for label, unit := range map[string]string{"ECG": "mV", "IMU9 Acc x": "m/s2", "IMU9 Gyro z": "deg/s", "IMU9 Magn y": "uT", "Gyro x": "deg/s"} {
		if lu[label] != unit {
			t.Errorf("log: %q in %q, want %q", label, lu[label], unit)
		}
	}
}
