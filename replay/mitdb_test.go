package replay

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"senseboard/sensor"
	"senseboard/signal"
	"senseboard/wfdb"
)

// detectRecording plays a recording at rate as /Meas/HR does on a replay
// of it by default, and returns the beats found, flushing the detector at
// the end: the ECG's first lead, changed in the signal drops given (nil
// for none), through the front end's filters into the single-lead detector
// (signal.HRDetector of one lead).
func detectRecording(r *Recording, rate float64, drops []drop) []time.Duration {
	return detectSource(NewSource(0, nil, r), r, rate, drops)
}

// detectTwoLeads plays at rate, as /Meas/HR does on a replay offering it
// two leads (Source.SetHRLeads), the recording of two leads whose first
// lead is r0's ECG and whose second is r1's (recordings of one lead, of the
// same record), each lead changed in its own signal drops, and returns the
// beats of the two-lead detector, flushed at the end.
func detectTwoLeads(r0, r1 *Recording, rate float64, drops0, drops1 []drop) []time.Duration {
	s0, s1 := r0.Series[ECG], r1.Series[ECG]
	both := *r0
	both.Series[ECG] = &Series{Channel: ECG, Rate: s0.Rate, T: s0.T, Axes: [][]float64{s0.Axes[0], s1.Axes[0]}}
	src := NewSource(0, nil, &both)
	if err := src.SetHRLeads(2); err != nil {
		panic(err)
	}
	return detectSource(src, &both, rate, drops0, drops1)
}

// detectSource plays src, which plays r, at rate as /Meas/HR does, and
// returns the beats found, flushing the detector at the end: the ECG, of
// two leads when src offers a second (sensor.SecondLead), each lead
// changed in its own signal drops (drops[k] for lead k; none given, or
// nil, for none), into the heart rate's detector of as many leads
// (signal.HRDetector: the front end's filters on each lead, then the
// single-lead or the two-lead detector).
func detectSource(src *Source, r *Recording, rate float64, drops ...[]drop) []time.Duration {
	two := sensor.SecondLead(src)
	leads := 1
	if two != nil {
		leads = 2
	}
	var dropsOf [2][]drop
	copy(dropsOf[:], drops)
	det := signal.NewHRDetector(rate, leads)
	at := func(k int64) time.Duration { return time.Duration(float64(k) / rate * float64(time.Second)) }
	dt := time.Duration(float64(time.Second) / rate)
	scale := math.Sqrt(rate / r.Series[ECG].Rate)
	dropped := [2]dropState{{scale: scale}, {scale: scale}}
	n := int(r.Length.Seconds() * rate)
	buf0, buf1 := make([]float64, 1024), make([]float64, 1024)
	var found []time.Duration
	for i := 0; i < n; i += len(buf0) {
		x0, x1 := buf0[:min(len(buf0), n-i)], buf1[:min(len(buf1), n-i)]
		if two != nil {
			two.FillTwoLeads(x0, x1, at(int64(i)), dt)
		} else {
			src.FillECG(x0, at(int64(i)), dt)
		}
		for k := range x0 {
			t := at(int64(i + k))
			y0 := dropped[0].apply(dropsOf[0], t, x0[k])
			y1 := 0.0
			if two != nil {
				y1 = dropped[1].apply(dropsOf[1], t, x1[k])
			}
			det.Feed(y0, y1)
			found = popBeats(det, rate, found)
		}
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

// TestHRDelay measures how long after its R peak a beat leaves the heart
// rate's detector at 256 Hz on the MIT-BIH records, on the first lead alone
// and on both (docs/behaviour.md has the figures; -v prints them), and
// checks the two-lead detector's promise: every beat by 1.5 s after its R
// peak, or by when a lead's own detector gives it if that is later.
func TestHRDelay(t *testing.T) {
	const rate = 256
	records := []string{"100", "101", "103", "105", "119", "208"}
	if testing.Short() {
		records = []string{"100s"}
	}
	// delays returns the delays of the beats of det fed x0 and x1, sorted
	delays := func(det *signal.HRDetector, x0, x1 []float64) []time.Duration {
		var d []time.Duration
		for k := range x0 {
			det.Feed(x0[k], x1[k])
			for r, ok := det.Pop(); ok; r, ok = det.Pop() {
				d = append(d, time.Duration(float64(int64(k)-r)/rate*float64(time.Second)))
			}
		}
		slices.Sort(d)
		return d
	}
	q := func(d []time.Duration, p float64) time.Duration { return d[int(p*float64(len(d)-1))] }
	ms := func(d []time.Duration, p float64) time.Duration { return q(d, p).Round(time.Millisecond) }
	for _, rec := range records {
		r, err := Load(needData(t, "mitdb/"+rec+".hea"))
		if err != nil {
			t.Fatal(err)
		}
		n := int(r.Length.Seconds() * rate)
		x0, x1 := make([]float64, n), make([]float64, n)
		NewSource(0, nil, r).FillTwoLeads(x0, x1, 0, time.Second/rate)
		one := delays(signal.NewHRDetector(rate, 1), x0, x1)
		second := delays(signal.NewHRDetector(rate, 1), x1, x0)
		two := delays(signal.NewHRDetector(rate, 2), x0, x1)
		t.Logf("record %-4s one lead: median %v, 99%% %v, most %v; two leads: median %v, 99%% %v, most %v",
			rec, ms(one, 0.5), ms(one, 0.99), ms(one, 1), ms(two, 0.5), ms(two, 0.99), ms(two, 1))
		bound := max(1500*time.Millisecond, q(one, 1), q(second, 1)) + time.Second/rate
		if most := q(two, 1); most > bound {
			t.Errorf("record %s: a beat of two leads %v after its R peak; want at most %v", rec, most, bound)
		}
	}
}
