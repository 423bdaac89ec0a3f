package sensor

import (
	"fmt"
	"testing"
	"time"

	"senseboard/signal"
	"senseboard/world"
)

func nearAny(f time.Duration, truth []time.Duration, tol time.Duration) bool {
	for _, r := range truth {
		if (f - r).Abs() <= tol {
			return true
		}
	}
	return false
}

// detect runs the front end (0.5 Hz high-pass, low-pass) and the QRS
// detector over the model's ECG from 0 to length at rate fs, and returns the
// beats found after the learning phase, with the truth over the same span.
func detect(t *testing.T, m *Model, fs float64, lowPass float64, length time.Duration) (truth, found []time.Duration) {
	t.Helper()
	hp, _ := signal.Butterworth(signal.HighPass, 2, 0.5, fs)
	lp, _ := signal.Butterworth(signal.LowPass, 2, lowPass, fs)
	det := signal.NewQRSDetector(fs)
	dt := time.Duration(float64(time.Second) / fs)
	n := int(length.Seconds() * fs)
	buf := make([]float64, 256)
	settle := 8 * time.Second // high-pass settling and detector learning
	end := time.Duration(n)*dt - time.Second
	for i := 0; i < n; i += len(buf) {
		chunk := buf[:min(len(buf), n-i)]
		m.FillECG(chunk, time.Duration(i)*dt, dt)
		// the truth as it is made: the wearer keeps a few seconds of beats
		from, to := max(time.Duration(i)*dt, settle), min(time.Duration(i+len(chunk))*dt, end)
		for _, b := range m.Beats(from, to) {
			truth = append(truth, b.At)
		}
		for _, x := range chunk {
			det.Feed(lp.Step(hp.Step(x)))
			for {
				k, ok := det.Pop()
				if !ok {
					break
				}
				if at := time.Duration(k) * dt; at > settle {
					found = append(found, at)
				}
			}
		}
	}
	// Score over [settle, end-1s): reference beats in that span, and the
	// detections that fall in it or match a beat in it.
	lo, hi := settle, end
	if len(truth) > 0 {
		lo, hi = min(lo, truth[0]-150*time.Millisecond), max(hi, truth[len(truth)-1]+150*time.Millisecond)
	}
	kept := found[:0]
	for _, f := range found {
		if f >= lo && f <= hi && (f >= settle && f < end || nearAny(f, truth, 150*time.Millisecond)) {
			kept = append(kept, f)
		}
	}
	return truth, kept
}

// TestQRSDetectionAccuracy runs the detector on the model's ECG from 40 to
// 200 bpm, at rest and in motion (artefacts and muscle noise), at several
// rates: sensitivity and positive predictivity must reach 99.5%.
func TestQRSDetectionAccuracy(t *testing.T) {
	length := 3 * time.Minute
	if testing.Short() {
		length = time.Minute
	}
	type run struct {
		activity string
		hr       int
		fs       float64
	}
	var runs []run
	for _, hr := range []int{40, 60, 80, 100, 120, 140, 160, 180, 200} {
		runs = append(runs, run{"rest", hr, 256})
	}
	runs = append(runs, run{"walk", 70, 200}, run{"run", 60, 250}, run{"walk", 90, 512}, run{"rest", 150, 125}, run{"run", 100, 128})
	var allTP, allFN, allFP int
	for i, r := range runs {
		sc, err := world.ParseScenario([]byte(fmt.Sprintf("segments:\n  - %s: 1h\n    heartRate: %d\n", r.activity, r.hr)))
		if err != nil {
			t.Fatal(err)
		}
		m := NewModel(world.New(uint64(i+1), sc, 0), uint64(i+1))
		truth, found := detect(t, m, r.fs, 40, length)
		tp, fn, fp := signal.MatchBeats(truth, found, 150*time.Millisecond)
		allTP, allFN, allFP = allTP+tp, allFN+fn, allFP+fp
		se, pp := 100*float64(tp)/float64(tp+fn), 100*float64(tp)/float64(tp+fp)
		t.Logf("%-4s %3d bpm at %3g Hz: %4d beats, Se %.2f%%, +P %.2f%%", r.activity, r.hr, r.fs, len(truth), se, pp)
		if se < 99.5 || pp < 99.5 {
			t.Errorf("%s at %d bpm, %g Hz: Se %.2f%%, +P %.2f%%; want both at least 99.5%%", r.activity, r.hr, r.fs, se, pp)
		}
	}
	t.Logf("all: Se %.3f%%, +P %.3f%% over %d beats", 100*float64(allTP)/float64(allTP+allFN), 100*float64(allTP)/float64(allTP+allFP), allTP+allFN)
}
