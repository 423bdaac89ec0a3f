package edf

import (
	"encoding/json"
	"math"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"senseboard/internal/mnetest"
)

// mneScript reads an EDF+ file with MNE-Python (an independent reader) and
// prints what it found as JSON.
const mneScript = `
import json, sys, warnings
warnings.simplefilter("ignore")
import mne
raw = mne.io.read_raw_edf(sys.argv[1], preload=True, verbose="error")
d = raw.get_data()
print(json.dumps({
  "names": raw.ch_names,
  "sfreq": raw.info["sfreq"],
  "start": raw.info["meas_date"].timestamp(),
  "n": int(d.shape[1]),
  "first": [float(v) for v in d[0][:300]],
  "onsets": [float(v) for v in raw.annotations.onset],
  "durations": [float(v) for v in raw.annotations.duration],
  "texts": list(raw.annotations.description),
}))
`

// TestIndependentReader writes a file and reads it back with MNE-Python
// (Debian's python3-mne): channel, rate, start, samples in volts and
// annotations must agree.
func TestIndependentReader(t *testing.T) {
	py := mnetest.Python(t)
	f := sample()
	f.Signals = f.Signals[:1] // MNE resamples signals of other rates
	path := filepath.Join(t.TempDir(), "rec.edf")
	if err := WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "-c", mneScript, path).Output()
	if err != nil {
		t.Fatalf("MNE could not read the file: %v", err)
	}
	var got struct {
		Names     []string  `json:"names"`
		Sfreq     float64   `json:"sfreq"`
		Start     float64   `json:"start"`
		N         int       `json:"n"`
		First     []float64 `json:"first"`
		Onsets    []float64 `json:"onsets"`
		Durations []float64 `json:"durations"`
		Texts     []string  `json:"texts"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Names) != 1 || got.Names[0] != "ECG" || got.Sfreq != 256 || got.N != 4*256 {
		t.Errorf("MNE sees channels %v at %g Hz, %d samples; want [ECG] at 256 Hz, 1024 samples", got.Names, got.Sfreq, got.N)
	}
	// MNE keeps the header's start to the second and counts onsets from the
	// first sample, as Unmarshal does
	if want := float64(f.Start.Truncate(time.Second).Unix()); got.Start != want {
		t.Errorf("MNE start %v, want %v", got.Start, want)
	}
	step := 10.0 / 65535 * 1e-3 // volts
	for i, v := range got.First {
		if w := f.Signals[0].Samples[i] * 1e-3; math.Abs(v-w) > step {
			t.Fatalf("sample %d: MNE reads %g V, want %g V", i, v, w)
		}
	}
	if len(got.Onsets) != len(f.Annotations) {
		t.Fatalf("MNE reads %d annotations %v, want %d", len(got.Onsets), got.Texts, len(f.Annotations))
	}
	for _, a := range f.Annotations {
		found := false
		for k := range got.Onsets {
			if got.Texts[k] == a.Text && math.Abs(got.Onsets[k]-a.Onset.Seconds()) < 1e-6 && math.Abs(got.Durations[k]-a.Duration.Seconds()) < 1e-6 {
				found = true
			}
		}
		if !found {
			t.Errorf("MNE lacks annotation %+v: onsets %v, texts %q", a, got.Onsets, got.Texts)
		}
	}
}
