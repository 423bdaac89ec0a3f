package truth

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"senseboard/edf"
	"senseboard/replay"
	"senseboard/sensor"
	"senseboard/wfdb"
	"senseboard/world"
)

func model(t *testing.T) *sensor.Model {
	t.Helper()
	sc, err := world.ParseScenario([]byte("start:\n  heartRate: 70\nsegments:\n  - rest: 1h\nheart:\n  pvc: 6\n  pac: 4\n  episodes:\n    - at: 60s\n      afib: 40s\n"))
	if err != nil {
		t.Fatal(err)
	}
	return sensor.NewModel(world.New(9, sc, 0), 9)
}

// TestWFDBTruth writes the model's truth as a WFDB record and reads it back
// with the replay package's WFDB reader: the signal, every beat at its
// sample, its type, and the rhythm changes.
func TestWFDBTruth(t *testing.T) {
	m := model(t)
	s := Span{From: 10 * time.Second, To: 130 * time.Second, Rate: 360}
	dir := t.TempDir()
	if err := WriteWFDB(dir, "model", m, s); err != nil {
		t.Fatal(err)
	}
	r, err := replay.Load(filepath.Join(dir, "model.hea"))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 120*360)
	m.FillECG(want, s.From, time.Second/360)
	got := r.Series[replay.ECG].Axes[0]
	if len(got) != len(want) {
		t.Fatalf("%d samples, want %d", len(got), len(want))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 0.5/200+1e-9 {
			t.Fatalf("sample %d: %g mV, want %g", i, got[i], want[i])
		}
	}
	beats := m.Beats(s.From, s.To)
	if len(r.Beats) != len(beats) {
		t.Fatalf("%d beats read back, want %d", len(r.Beats), len(beats))
	}
	for i, b := range beats {
		if d := r.Beats[i] - (b.At - s.From); d.Abs() > time.Second/360 {
			t.Fatalf("beat %d at %v, want %v", i, r.Beats[i], b.At-s.From)
		}
	}
	atr, err := os.ReadFile(filepath.Join(dir, "model.atr"))
	if err != nil {
		t.Fatal(err)
	}
	anns, err := wfdb.ParseAnnotations(atr)
	if err != nil {
		t.Fatal(err)
	}
	codes, rhythms := map[int]int{}, []string{}
	for _, a := range anns {
		codes[a.Code]++
		if a.Code == wfdb.CodeRhythm {
			rhythms = append(rhythms, a.Aux)
		}
	}
	kinds := map[world.BeatKind]int{}
	for _, b := range beats {
		kinds[b.Kind]++
	}
	if codes[wfdb.CodeNormal] != kinds[world.Normal] || codes[wfdb.CodeVentricular] != kinds[world.Ventricular] || codes[wfdb.CodeAtrial] != kinds[world.AtrialPremature] || kinds[world.Ventricular] == 0 || kinds[world.AtrialPremature] == 0 {
		t.Errorf("annotation codes %v; beat kinds %v", codes, kinds)
	}
	if len(rhythms) != 3 || rhythms[0] != "(N" || rhythms[1] != "(AFIB" || rhythms[2] != "(N" {
		t.Errorf("rhythm annotations %q; want (N, (AFIB, (N", rhythms)
	}
}

// TestEDFTruth writes the truth as EDF+ and reads it back: the beats and the
// rhythm episode are in the annotation signal at their times.
func TestEDFTruth(t *testing.T) {
	m := model(t)
	s := Span{From: 10 * time.Second, To: 130 * time.Second, Rate: 256}
	path := filepath.Join(t.TempDir(), "model.edf")
	start := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	if err := WriteEDF(path, m, s, start); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := edf.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Signals) != 1 || f.Signals[0].Rate != 256 || len(f.Signals[0].Samples) != 120*256 || !f.Start.Equal(start) {
		t.Fatalf("read back %d signals, start %v", len(f.Signals), f.Start)
	}
	beats := m.Beats(s.From, s.To)
	var got []edf.Annotation
	var afib *edf.Annotation
	for i, a := range f.Annotations {
		switch a.Text {
		case "N", "V", "A":
			got = append(got, a)
		case "(AFIB":
			afib = &f.Annotations[i]
		}
	}
	if len(got) != len(beats) {
		t.Fatalf("%d beat annotations, want %d", len(got), len(beats))
	}
	for i, b := range beats {
		if got[i].Onset != b.At-s.From || got[i].Text != beatText[b.Kind] {
			t.Fatalf("annotation %d: %+v, want %v at %v", i, got[i], beatText[b.Kind], b.At-s.From)
		}
	}
	if afib == nil || (afib.Onset-50*time.Second).Abs() > 2*time.Second || (afib.Duration-40*time.Second).Abs() > 2*time.Second {
		t.Errorf("atrial fibrillation annotation %+v; want about 40 s from 50 s", afib)
	}
}

func TestSpanRefused(t *testing.T) {
	m := model(t)
	for _, s := range []Span{{From: 0, To: time.Second, Rate: 0}, {From: time.Second, To: 0, Rate: 250}} {
		if err := WriteWFDB(t.TempDir(), "x", m, s); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
}
