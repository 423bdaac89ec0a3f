package mem_test

import (
	"encoding/json"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"senseboard/edf"
	"senseboard/provider/mem"
	"senseboard/resource"
	"senseboard/senseboardtest"
)

func recordLog(t *testing.T, seconds int, paths ...string) []byte {
	t.Helper()
	d := senseboardtest.New(t, senseboardtest.Config{})
	d.Expect(200, resource.Put, "/Time", resource.Int64(1_763_900_000_000_000))
	d.Expect(200, resource.Put, "/Mem/DataLogger/Config", config(t, paths...))
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(mem.StateLogging))
	for range seconds * 10 {
		d.Advance(100 * time.Millisecond)
	}
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(mem.StateReady))
	return logBytes(t, d, 1)
}

func TestEDF(t *testing.T) {
	f, err := mem.EDF(recordLog(t, 6, "/Time/Detailed", "/Meas/ECG/200/mV", "/Meas/Acc/52", "/Meas/HR"))
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

	py, err := exec.LookPath("python3")
	if err != nil || exec.Command(py, "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('mne') is None)").Run() != nil {
		t.Skip("MNE-Python is not installed (apt-get install python3-mne): the independent EDF+ reader check is skipped")
	}
	path := filepath.Join(t.TempDir(), "log.edf")
	if err := edf.WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "-c", `
import json, sys, warnings
warnings.simplefilter("ignore")
import mne
raw = mne.io.read_raw_edf(sys.argv[1], preload=True, verbose="error")
print(json.dumps({"names": raw.ch_names, "seconds": raw.n_times / raw.info["sfreq"],
  "start": raw.info["meas_date"].timestamp(), "texts": list(raw.annotations.description)}))
`, path).Output()
	if err != nil {
		t.Fatalf("MNE could not read the log's EDF+: %v", err)
	}
	var got struct {
		Names   []string
		Seconds float64
		Start   float64
		Texts   []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Names, labels) || got.Seconds < 5 || got.Seconds > 7.5 || math.Abs(got.Start-float64(g.Start.Unix())) > 1 {
		t.Errorf("MNE read %+v", got)
	}
	if !slices.ContainsFunc(got.Texts, func(s string) bool { return strings.HasPrefix(s, "HR ") }) {
		t.Errorf("MNE found no heart rate annotation in %q", got.Texts)
	}
}
