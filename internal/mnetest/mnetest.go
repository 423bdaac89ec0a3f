// Package mnetest reads EDF+ files back with MNE-Python, a reader
// independent of package edf, for tests. Debian's python3-mne installs it
// for the system's Python (/usr/bin/python3), which may not be the python3
// first on the path.
package mnetest

import (
	"encoding/json"
	"os/exec"
	"testing"

	"senseboard/internal/needs"
)

// Python returns a Python interpreter that has MNE: python3 on the path or
// the system's. When neither has it, the test skips (fails under CI).
func Python(tb testing.TB) string {
	tb.Helper()
	return needs.Python(tb, "mne", "Debian: apt-get install python3-mne")
}

// Raw is what MNE reads from an EDF+ file.
type Raw struct {
	Names     []string  `json:"names"`     // channel labels
	Sfreq     float64   `json:"sfreq"`     // MNE's common rate (the highest)
	Seconds   float64   `json:"seconds"`   // length
	Start     float64   `json:"start"`     // Unix seconds
	Onsets    []float64 `json:"onsets"`    // annotations, seconds from the start
	Durations []float64 `json:"durations"` // seconds
	Texts     []string  `json:"texts"`
	Units     []string  `json:"units"` // per channel, as MNE reports them
}

const script = `
import json, sys, warnings
warnings.simplefilter("ignore")
import mne
out = []
for path in sys.argv[1:]:
    raw = mne.io.read_raw_edf(path, preload=True, verbose="error")
    out.append({
      "names": raw.ch_names,
      "sfreq": raw.info["sfreq"],
      "seconds": raw.n_times / raw.info["sfreq"],
      "start": raw.info["meas_date"].timestamp(),
      "onsets": [float(v) for v in raw.annotations.onset],
      "durations": [float(v) for v in raw.annotations.duration],
      "texts": list(raw.annotations.description),
      "units": [str(raw._orig_units.get(n, "")) for n in raw.ch_names],
    })
print(json.dumps(out))
`

// Read reads the file at path with MNE; it skips the test when MNE is not
// installed (fails it under CI) and fails it when MNE cannot read the file.
func Read(tb testing.TB, path string) *Raw {
	tb.Helper()
	return ReadFiles(tb, path)[0]
}

// ReadFiles reads several files in one run of Python (MNE takes seconds
// to load), as Read does.
func ReadFiles(tb testing.TB, paths ...string) []*Raw {
	tb.Helper()
	py := Python(tb)
	out, err := exec.Command(py, append([]string{"-c", script}, paths...)...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		tb.Fatalf("MNE could not read %v: %v\n%s", paths, err, stderr)
	}
	var r []*Raw
	if err := json.Unmarshal(out, &r); err != nil || len(r) != len(paths) {
		tb.Fatalf("MNE's answer %s: %v", out, err)
	}
	return r
}
