package sensor

import (
	"math"
	"testing"
	"time"

	"senseboard/signal"
	"senseboard/world"
)

// heartModel returns the sensors on a wearer resting at 60 bpm with the
// scenario's heart section.
func heartModel(t *testing.T, heart string) *Model {
	t.Helper()
	sc, err := world.ParseScenario([]byte("start:\n  heartRate: 60\n  posture: sitting\nsegments:\n  - rest: 1h\n" + heart))
	if err != nil {
		t.Fatal(err)
	}
	return NewModel(world.New(3, sc, 0), 3)
}

func rrStats(beats []world.Beat) (mean, cv float64) {
	var s, s2 float64
	for _, b := range beats {
		s += b.RR.Seconds()
		s2 += b.RR.Seconds() * b.RR.Seconds()
	}
	n := float64(len(beats))
	mean = s / n
	return mean, math.Sqrt(s2/n-mean*mean) / mean
}

// TestEctopicBeats checks the rates and timing of premature beats: a
// ventricular beat comes early and is followed by a full compensatory pause
// (the two intervals around it add up to two sinus intervals); an atrial
// one resets the sinus node (they add up to less).
func TestEctopicBeats(t *testing.T) {
	m := heartModel(t, "heart:\n  pvc: 6\n  pac: 4\n")
	beats := m.Beats(10*time.Second, 10*time.Minute+10*time.Second)
	count := map[world.BeatKind]int{}
	ratios := map[world.BeatKind][]float64{} // the intervals around the beat over the sinus interval
	for i, b := range beats {
		count[b.Kind]++
		if i < 2 || i+2 >= len(beats) || beats[i+2].Kind != world.Normal || b.Kind == world.Normal || beats[i-1].Kind != world.Normal || beats[i-2].Kind != world.Normal {
			continue
		}
		sinus := (beats[i-1].RR + beats[i+2].RR).Seconds() / 2 // the sinus intervals on either side
		if b.RR.Seconds() > 0.8*sinus {
			t.Errorf("%v beat at %v: coupling interval %v; want under 80%% of the sinus interval %.3f s", b.Kind, b.At, b.RR, sinus)
		}
		ratios[b.Kind] = append(ratios[b.Kind], (b.RR+beats[i+1].RR).Seconds()/sinus)
	}
	mean := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s / float64(max(len(v), 1))
	}
	if r := mean(ratios[world.Ventricular]); math.Abs(r-2) > 0.05 {
		t.Errorf("ventricular beats: the two intervals around one are %.3f sinus intervals on average; want 2 (compensatory pause)", r)
	}
	if r := mean(ratios[world.AtrialPremature]); r > 1.85 {
		t.Errorf("atrial premature beats: the two intervals around one are %.3f sinus intervals on average; want under 1.85 (the sinus node resets)", r)
	}
	if v := count[world.Ventricular]; v < 40 || v > 80 {
		t.Errorf("%d ventricular beats in 10 min; want about 60", v)
	}
	if a := count[world.AtrialPremature]; a < 25 || a > 55 {
		t.Errorf("%d atrial premature beats in 10 min; want about 40", a)
	}
	healthy := heartModel(t, "")
	for _, b := range healthy.Beats(0, 10*time.Minute) {
		if b.Kind != world.Normal || b.Rhythm != world.Sinus {
			t.Fatalf("a healthy heart has a %v beat in %v rhythm at %v", b.Kind, b.Rhythm, b.At)
		}
	}
}

// TestRhythmEpisodes checks atrial fibrillation (irregular intervals at its
// rate), bradycardia and tachycardia episodes at the rates the scenario sets.
func TestRhythmEpisodes(t *testing.T) {
	m := heartModel(t, `heart:
  episodes:
    - at: 2m
      afib: 3m
      heartRate: 100
    - at: 6m
      bradycardia: 2m
      heartRate: 38
    - at: 9m
      tachycardia: 2m
`)
	tests := []struct {
		name              string
		from, to          time.Duration
		rhythm            world.Rhythm
		bpm, minCV, maxCV float64
	}{
		{"sinus", 10 * time.Second, 110 * time.Second, world.Sinus, 60, 0, 0.08},
		{"afib", 130 * time.Second, 290 * time.Second, world.AtrialFibrillation, 100, 0.15, 0.4},
		{"bradycardia", 370 * time.Second, 470 * time.Second, world.Bradycardia, 38, 0, 0.08},
		{"tachycardia", 550 * time.Second, 650 * time.Second, world.Tachycardia, 160, 0, 0.08},
	}
	for _, tt := range tests {
		beats := m.Beats(tt.from, tt.to)
		for _, b := range beats {
			if b.Rhythm != tt.rhythm {
				t.Fatalf("%s: beat at %v in %v rhythm", tt.name, b.At, b.Rhythm)
			}
		}
		mean, cv := rrStats(beats)
		if bpm := 60 / mean; math.Abs(bpm-tt.bpm) > 0.08*tt.bpm || cv < tt.minCV || cv > tt.maxCV {
			t.Errorf("%s: %.1f bpm, RR variation %.3f; want %.0f bpm, variation %.2f..%.2f", tt.name, bpm, cv, tt.bpm, tt.minCV, tt.maxCV)
		}
	}
}

// average returns the ECG averaged over the beats of a kind and rhythm,
// aligned on their R peaks, from -300 ms to +300 ms at fs, with the level at
// -300..-260 ms taken as the baseline.
func average(m *Model, beats []world.Beat, kind world.BeatKind, rhythm world.Rhythm, fs float64) (avg []float64, n int) {
	w := int(0.3 * fs)
	avg = make([]float64, 2*w+1)
	buf := make([]float64, 2*w+1)
	dt := time.Duration(float64(time.Second) / fs)
	for _, b := range beats {
		if b.Kind != kind || b.Rhythm != rhythm {
			continue
		}
		m.FillECG(buf, b.At-time.Duration(w)*dt, dt)
		base := 0.0
		for _, v := range buf[:int(0.04*fs)] {
			base += v / float64(int(0.04*fs))
		}
		for i, v := range buf {
			avg[i] += v - base
		}
		n++
	}
	for i := range avg {
		avg[i] /= float64(max(n, 1))
	}
	return avg, n
}

// TestBeatMorphology measures the synthesized ECG: P waves before sinus
// beats, none in atrial fibrillation, an inverted one before premature
// atrial beats; a narrow QRS for conducted beats, a wide one for
// ventricular beats.
func TestBeatMorphology(t *testing.T) {
	const fs = 500
	m := heartModel(t, "heart:\n  pvc: 6\n  pac: 6\n  episodes:\n    - at: 5m\n      afib: 5m\n      heartRate: 70\n")
	beats := m.Beats(10*time.Second, 10*time.Minute)
	w := int(0.3 * fs)
	pWave := func(avg []float64) float64 { // the extreme in -200..-100 ms
		best := 0.0
		for i := w - int(0.2*fs); i <= w-int(0.1*fs); i++ {
			if math.Abs(avg[i]) > math.Abs(best) {
				best = avg[i]
			}
		}
		return best
	}
	qrsWidth := func(avg []float64) time.Duration { // where |x| > 0.15 mV within 120 ms of R
		lo, hi := w, w
		for i := w - int(0.12*fs); i <= w+int(0.12*fs); i++ {
			if math.Abs(avg[i]) > 0.15 {
				lo, hi = min(lo, i), max(hi, i)
			}
		}
		return time.Duration(float64(hi-lo) / fs * float64(time.Second))
	}
	tests := []struct {
		name       string
		kind       world.BeatKind
		rhythm     world.Rhythm
		pMin, pMax float64 // mV
		wMin, wMax time.Duration
	}{
		{"sinus", world.Normal, world.Sinus, 0.1, 0.2, 50 * time.Millisecond, 100 * time.Millisecond},
		{"atrial fibrillation", world.Normal, world.AtrialFibrillation, -0.03, 0.03, 50 * time.Millisecond, 100 * time.Millisecond},
		{"atrial premature", world.AtrialPremature, world.Sinus, -0.15, -0.05, 50 * time.Millisecond, 100 * time.Millisecond},
		// the previous beat's T wave ends in the window of an early beat
		{"ventricular", world.Ventricular, world.Sinus, -0.05, 0.05, 130 * time.Millisecond, 240 * time.Millisecond},
	}
	for _, tt := range tests {
		avg, n := average(m, beats, tt.kind, tt.rhythm, fs)
		if n < 10 {
			t.Fatalf("%s: only %d beats", tt.name, n)
		}
		p, width := pWave(avg), qrsWidth(avg)
		t.Logf("%-20s %3d beats: P %+.3f mV, QRS %v", tt.name, n, p, width)
		if p < tt.pMin || p > tt.pMax {
			t.Errorf("%s: P wave %+.3f mV; want %+.2f..%+.2f", tt.name, p, tt.pMin, tt.pMax)
		}
		if width < tt.wMin || width > tt.wMax {
			t.Errorf("%s: QRS %v wide; want %v..%v", tt.name, width, tt.wMin, tt.wMax)
		}
	}
}

// TestDetectionOfArrhythmias runs /Meas/HR's detector over premature beats
// and atrial fibrillation: it must find them as it finds sinus beats.
func TestDetectionOfArrhythmias(t *testing.T) {
	length := 6 * time.Minute
	if testing.Short() {
		length = 2 * time.Minute
	}
	m := heartModel(t, "heart:\n  pvc: 6\n  pac: 4\n  episodes:\n    - at: 1m\n      afib: 1m\n    - at: 3m\n      tachycardia: 1m\n")
	truth, found := detect(t, m, 256, 40, length)
	s := signal.ScoreBeats(truth, found, 150*time.Millisecond)
	t.Logf("%d beats: Se %.2f%%, +P %.2f%%, median error %v", len(truth), s.Se(), s.PP(), s.ErrorQuantile(0.5))
	if s.Se() < 99.5 || s.PP() < 99.5 {
		t.Errorf("Se %.2f%%, +P %.2f%%; want both at least 99.5%% (missed %v, false %v)", s.Se(), s.PP(), s.Missed, s.False)
	}
}

// No wave of any beat reaches further than world.BeatsAhead before its R
// peak: the ECG asks for the beats that far past its samples, and no
// further.
func TestWavesWithinBeatsAhead(t *testing.T) {
	for _, b := range []world.Beat{
		{Kind: world.Normal},
		{Kind: world.Ventricular},
		{Kind: world.AtrialPremature},
		{Kind: world.Normal, Rhythm: world.AtrialFibrillation},
	} {
		var db drawnBeat
		shape(b, world.Beat{RR: 2 * time.Second}).draw(&db) // the T wave at its widest
		if db.n == 0 {
			t.Fatalf("%v: no waves", b.Kind)
		}
		for _, wv := range db.waves[:db.n] {
			if reach := -wv.lo; reach >= world.BeatsAhead.Seconds() {
				t.Errorf("%v, %v: a wave at %v s of width %v reaches %v s before its R peak; BeatsAhead is %v", b.Kind, b.Rhythm, wv.at, wv.width, reach, world.BeatsAhead)
			}
		}
	}
}
