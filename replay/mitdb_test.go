package replay

import (
	"testing"
	"time"

	"senseboard/signal"
)

// DetectRecording plays a recording's ECG at rate through the device's front
// end (0.5 Hz high-pass, 40 Hz low-pass) into the QRS detector and returns
// the beats found.
func detectRecording(r *Recording, rate float64) []time.Duration {
	src := NewSource(0, nil, r)
	hp, _ := signal.Butterworth(signal.HighPass, 2, 0.5, rate)
	lp, _ := signal.Butterworth(signal.LowPass, 2, 40, rate)
	det := signal.NewQRSDetector(rate)
	dt := time.Duration(float64(time.Second) / rate)
	n := int(r.Length.Seconds() * rate)
	buf := make([]float64, 1024)
	var found []time.Duration
	for i := 0; i < n; i += len(buf) {
		chunk := buf[:min(len(buf), n-i)]
		src.FillECG(chunk, time.Duration(i)*dt, dt)
		for _, x := range chunk {
			det.Feed(lp.Step(hp.Step(x)))
			for {
				k, ok := det.Pop()
				if !ok {
					break
				}
				found = append(found, time.Duration(k)*dt)
			}
		}
	}
	return found
}

// TestMITBIHDetection runs the detector on the MIT-BIH records of the shared
// data, resampled from 360 Hz to a device rate of 250 Hz, and reports
// sensitivity and positive predictivity per record (docs/accuracy.md holds
// the figures). The first 10 s (filter settling and learning) are not scored.
func TestMITBIHDetection(t *testing.T) {
	records := []string{"100", "101", "103", "105", "119", "208"}
	if testing.Short() {
		records = []string{"100s"}
	}
	var allTP, allFN, allFP int
	for _, rec := range records {
		r, err := Load(needData(t, "mitdb/"+rec+".hea"))
		if err != nil {
			t.Fatal(err)
		}
		found := detectRecording(r, 250)
		const skip = 10 * time.Second
		var ref []time.Duration
		for _, b := range r.Beats {
			if b >= skip {
				ref = append(ref, b)
			}
		}
		var det []time.Duration
		for _, f := range found {
			if f >= skip-150*time.Millisecond {
				det = append(det, f)
			}
		}
		tp, fn, fp := signal.MatchBeats(ref, det, 150*time.Millisecond)
		allTP, allFN, allFP = allTP+tp, allFN+fn, allFP+fp
		se, pp := 100*float64(tp)/float64(tp+fn), 100*float64(tp)/float64(tp+fp)
		t.Logf("record %-4s  beats %5d  TP %5d  FN %4d  FP %4d  Se %6.2f%%  +P %6.2f%%", rec, len(ref), tp, fn, fp, se, pp)
		if se < 90 || pp < 90 {
			t.Errorf("record %s: Se %.2f%%, +P %.2f%%; below 90%% the detector is broken", rec, se, pp)
		}
	}
	t.Logf("total        beats %5d  TP %5d  FN %4d  FP %4d  Se %6.2f%%  +P %6.2f%%", allTP+allFN, allTP, allFN, allFP,
		100*float64(allTP)/float64(allTP+allFN), 100*float64(allTP)/float64(allTP+allFP))
}
