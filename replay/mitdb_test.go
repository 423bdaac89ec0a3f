package replay

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"senseboard/signal"
	"senseboard/wfdb"
)

// detectRecording plays a recording's ECG at rate through the device's front
// end into the QRS detector, as /Meas/HR does, and returns the beats found,
// flushing the detector at the end. The input is changed in the signal
// drops given (nil for none).
func detectRecording(r *Recording, rate float64, drops []drop) []time.Duration {
	det := signal.NewQRSDetector(rate)
	var found []time.Duration
	playECG(r, rate, drops, func(x float64) {
		det.Feed(x)
		found = popBeats(det, rate, found)
	})
	det.Flush()
	return popBeats(det, rate, found)
}

// detectTwoLeads plays two leads of a recording (r0 and r1, of the same
// length) at rate through the device's front end into the two-lead
// detector, and returns the beats found, flushing it at the end. Each lead
// is changed in its own signal drops (nil for none).
func detectTwoLeads(r0, r1 *Recording, rate float64, drops0, drops1 []drop) []time.Duration {
	var x0, x1 []float64
	playECG(r0, rate, drops0, func(x float64) { x0 = append(x0, x) })
	playECG(r1, rate, drops1, func(x float64) { x1 = append(x1, x) })
	det := signal.NewTwoLeadDetector(rate)
	var found []time.Duration
	for k := range min(len(x0), len(x1)) {
		det.Feed(x0[k], x1[k])
		found = popBeats(det, rate, found)
	}
	det.Flush()
	return popBeats(det, rate, found)
}

// popBeats appends the beats a detector (one lead's or two leads') has
// found to found, as times at rate.
func popBeats(det interface{ Pop() (int64, bool) }, rate float64, found []time.Duration) []time.Duration {
	for k, ok := det.Pop(); ok; k, ok = det.Pop() {
		found = append(found, time.Duration(float64(k)/rate*float64(time.Second)))
	}
	return found
}

// playECG plays a recording's ECG at rate, changed in the signal drops
// given (nil for none), through the device's front end (0.5 Hz high-pass,
// 40 Hz low-pass), and gives each sample to feed.
func playECG(r *Recording, rate float64, drops []drop, feed func(float64)) {
	src := NewSource(0, nil, r)
	hp, _ := signal.Butterworth(signal.HighPass, 2, 0.5, rate)
	lp, _ := signal.Butterworth(signal.LowPass, 2, 40, rate)
	at := func(k int64) time.Duration { return time.Duration(float64(k) / rate * float64(time.Second)) }
	n := int(r.Length.Seconds() * rate)
	buf := make([]float64, 1024)
	dropped := dropState{scale: math.Sqrt(rate / r.Series[ECG].Rate)}
	for i := 0; i < n; i += len(buf) {
		chunk := buf[:min(len(buf), n-i)]
		src.FillECG(chunk, at(int64(i)), time.Duration(float64(time.Second)/rate))
		for k, x := range chunk {
			feed(lp.Step(hp.Step(dropped.apply(drops, at(int64(i+k)), x))))
		}
	}
}

// span is a time interval [from, to).
type span struct{ from, to time.Duration }

func inSpans(t time.Duration, s []span) bool {
	for _, x := range s {
		if t >= x.from && t < x.to {
			return true
		}
	}
	return false
}

// flutterEpisodes returns the ventricular flutter and fibrillation episodes
// of a WFDB record: from a rhythm annotation "(VFL" or "(VF" to the next
// rhythm annotation.
func flutterEpisodes(t *testing.T, hea string) []span {
	t.Helper()
	vf, err := flutterEpisodesOf(hea)
	if err != nil {
		t.Fatal(err)
	}
	return vf
}

func flutterEpisodesOf(hea string) ([]span, error) {
	h, err := os.ReadFile(hea)
	if err != nil {
		return nil, err
	}
	hdr, err := wfdb.ParseHeader(h)
	if err != nil {
		return nil, err
	}
	atr, err := os.ReadFile(strings.TrimSuffix(hea, ".hea") + ".atr")
	if err != nil {
		return nil, err
	}
	anns, err := wfdb.ParseAnnotations(atr)
	if err != nil {
		return nil, err
	}
	at := func(k int64) time.Duration { return time.Duration(float64(k) / hdr.Rate * float64(time.Second)) }
	var out []span
	open := time.Duration(-1)
	for _, a := range anns {
		if a.Code != 28 || a.Aux == "" {
			continue
		}
		if open >= 0 {
			out = append(out, span{open, at(a.Sample)})
			open = -1
		}
		if a.Aux == "(VFL" || a.Aux == "(VF" {
			open = at(a.Sample)
		}
	}
	if open >= 0 {
		out = append(out, span{open, 1<<63 - 1})
	}
	return out, nil
}

// scoreRecording scores detections against a record's beats after the first
// skip of the record. The beats just before skip take part in the matching,
// so that a detection of one of them is not counted false, but only the
// beats and the detections from skip on are counted. Without flutter (EC57),
// the beats and the detections inside ventricular flutter or fibrillation
// episodes are not scored.
func scoreRecording(ref, found []time.Duration, skip time.Duration, vf []span) (with, without signal.Scored) {
	const tol = 150 * time.Millisecond
	score := func(excluded []span) signal.Scored {
		var r, f []time.Duration
		for _, b := range ref {
			if b >= skip-tol && !inSpans(b, excluded) {
				r = append(r, b)
			}
		}
		for _, d := range found {
			if d >= skip-tol && !inSpans(d, excluded) {
				f = append(f, d)
			}
		}
		all := signal.ScoreBeats(r, f, tol)
		// count from skip on: the outcomes of the beats before it go, in
		// the order ScoreBeats lists them
		s := signal.Scored{Missed: all.Missed[:0:0], False: all.False[:0:0]}
		m, e := 0, 0
		for _, b := range r {
			if m < len(all.Missed) && all.Missed[m] == b {
				m++
				if b >= skip {
					s.FN++
					s.Missed = append(s.Missed, b)
				}
				continue
			}
			if b >= skip {
				s.TP++
				s.Errors = append(s.Errors, all.Errors[e])
			}
			e++
		}
		for _, d := range all.False {
			if d >= skip {
				s.FP++
				s.False = append(s.False, d)
			}
		}
		return s
	}
	return score(nil), score(vf)
}

// TestMITBIHDetection runs the detector on the MIT-BIH records of the shared
// data, resampled from 360 Hz to each ECG rate of the device, and reports
// sensitivity, positive predictivity and beat position errors per record and
// in total (docs/accuracy.md holds the figures). The first 10 s (filter
// settling and learning) are not scored. The totals must reach Se 99.8% at
// 200 Hz and above and 99.7% at 125 and 128 Hz, +P 99.7% at every rate (it
// measured Se 99.80% to 99.82%, +P 99.71% to 99.75%: record 105's noise
// gives 27 to 31 of its 34 to 39 false beats), a median position error of at
// most 10 ms and 99% of beats within 50 ms. The targets for records the
// detector was not developed on are 99.8% and 99.5%. Half of these six
// records are development records (docs/accuracy.md).
func TestMITBIHDetection(t *testing.T) {
	records := []string{"100", "101", "103", "105", "119", "208"}
	rates := []float64{256, 125, 128, 200, 250, 500, 512}
	if testing.Short() {
		records, rates = []string{"100s"}, []float64{256}
	}
	recs := make([]*Recording, len(records))
	vfs := make([][]span, len(records))
	for i, rec := range records {
		hea := needData(t, "mitdb/"+rec+".hea")
		r, err := Load(hea)
		if err != nil {
			t.Fatal(err)
		}
		recs[i], vfs[i] = r, flutterEpisodes(t, hea)
	}
	const skip = 10 * time.Second
	for _, rate := range rates {
		var all, allEC signal.Scored
		for i, r := range recs {
			with, without := scoreRecording(r.Beats, detectRecording(r, rate, nil), skip, vfs[i])
			all.Add(with)
			allEC.Add(without)
			t.Logf("%3g Hz record %-4s  beats %5d  TP %5d  FN %4d  FP %4d  Se %6.2f%%  +P %6.2f%%  median %2d ms  p99 %3d ms",
				rate, records[i], with.TP+with.FN, with.TP, with.FN, with.FP, with.Se(), with.PP(),
				with.ErrorQuantile(0.5).Milliseconds(), with.ErrorQuantile(0.99).Milliseconds())
			if testing.Verbose() && os.Getenv("MITDB_DETAIL") != "" {
				t.Logf("    missed %v", short(with.Missed))
				t.Logf("    false  %v", short(with.False))
			}
		}
		t.Logf("%3g Hz total        beats %5d  TP %5d  FN %4d  FP %4d  Se %6.2f%%  +P %6.2f%%  median %2d ms  p99 %3d ms; without VF/VFL: Se %6.2f%%  +P %6.2f%%",
			rate, all.TP+all.FN, all.TP, all.FN, all.FP, all.Se(), all.PP(),
			all.ErrorQuantile(0.5).Milliseconds(), all.ErrorQuantile(0.99).Milliseconds(), allEC.Se(), allEC.PP())
		se, pp := 99.8, 99.7
		if rate < 200 {
			se = 99.7
		}
		if testing.Short() {
			se, pp = 99, 99
		}
		if allEC.Se() < se || allEC.PP() < pp {
			t.Errorf("%g Hz: Se %.2f%%, +P %.2f%%; want at least %g%% and %g%%", rate, allEC.Se(), allEC.PP(), se, pp)
		}
		if m, p := all.ErrorQuantile(0.5), all.ErrorQuantile(0.99); m > 10*time.Millisecond || p > 50*time.Millisecond {
			t.Errorf("%g Hz: beat position error median %v, 99th percentile %v; want at most 10 ms and 50 ms", rate, m, p)
		}
	}
}

func short(v []time.Duration) string {
	var b strings.Builder
	for i, d := range v {
		if i == 40 {
			fmt.Fprintf(&b, " ... (%d)", len(v))
			break
		}
		fmt.Fprintf(&b, " %.2f", d.Seconds())
	}
	return b.String()
}
