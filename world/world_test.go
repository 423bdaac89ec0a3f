package world

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

const walkScenario = `
name: test walk
start:
  heartRate: 60
segments:
  - rest: 2m
  - walk: 5m
  - run: 3m
  - rest: 10m
events:
  - at: 30s
    tap: {}
  - at: 40s
    doubleTap: {}
  - at: 50s
    freeFall: 500ms
  - at: 15m
    gear: off
  - at: 16m
    posture: lying-back
`

func mustScenario(t testing.TB, s string) *Scenario {
	t.Helper()
	sc, err := ParseScenario([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestHeartRateFollowsActivity(t *testing.T) {
	w := New(1, mustScenario(t, walkScenario), 0)
	hr := func(at time.Duration) float64 { return w.At(at).HeartRate }
	rest, walk, run, recovered := hr(110*time.Second), hr(6*time.Minute+50*time.Second), hr(9*time.Minute+50*time.Second), hr(19*time.Minute)
	if rest < 52 || rest > 68 {
		t.Errorf("resting heart rate %.1f, want about 60", rest)
	}
	if walk < rest+20 || run < walk+25 {
		t.Errorf("heart rate at rest %.1f, walking %.1f, running %.1f: must rise with activity", rest, walk, run)
	}
	if recovered > rest+12 {
		t.Errorf("heart rate %.1f ten minutes after running, want back near %.1f", recovered, rest)
	}
}

func TestBeatsMatchHeartRate(t *testing.T) {
	w := New(2, mustScenario(t, walkScenario), 0)
	beats := w.AppendBeats(nil, 60*time.Second, 120*time.Second)
	bpm := float64(len(beats))
	st := w.At(90 * time.Second)
	if math.Abs(bpm-st.HeartRate) > 6 {
		t.Errorf("%v beats in a minute at %.1f bpm", bpm, st.HeartRate)
	}
	var sd, mean float64
	for _, b := range beats {
		mean += b.RR.Seconds()
	}
	mean /= float64(len(beats))
	for i, b := range beats {
		sd += (b.RR.Seconds() - mean) * (b.RR.Seconds() - mean)
		if i > 0 && b.At-beats[i-1].At != b.RR {
			t.Fatalf("beat %d: RR %v does not match the interval %v", b.N, b.RR, b.At-beats[i-1].At)
		}
	}
	sd = math.Sqrt(sd / float64(len(beats)))
	if sd < 0.01 || sd > 0.08 {
		t.Errorf("RR standard deviation %.3f s: want natural variability of tens of ms", sd)
	}
}

func TestNextBeat(t *testing.T) {
	sc := mustScenario(t, walkScenario)
	w, fresh := New(3, sc, 0), New(3, sc, 0)
	all := fresh.AppendBeats(nil, 0, 12*time.Minute)
	for _, at := range []time.Duration{0, 700 * time.Millisecond, 2*time.Minute + 3*time.Millisecond, 9 * time.Minute, all[40].At, all[41].At - 1} {
		got := w.NextBeat(at)
		i := 0
		for all[i].At < at {
			i++
		}
		if got != all[i] {
			t.Errorf("NextBeat(%v) = beat %d at %v, want beat %d at %v", at, got.N, got.At, all[i].N, all[i].At)
		}
	}
}

// A span's ends are what At gives at them, and its contact is steady
// unless the electrodes lose or regain contact within it.
func TestSpanMatchesState(t *testing.T) {
	w := New(4, mustScenario(t, walkScenario), 0)
	w.Inject(Event{At: 2*time.Minute + 100*time.Millisecond, Kind: ContactLoss, Duration: time.Second})
	for _, c := range []struct {
		t0, t1 time.Duration
		steady bool
	}{
		{0, 0, true},
		{3 * time.Millisecond, 250 * time.Millisecond, true},
		{2*time.Minute + 7*time.Millisecond, 2*time.Minute + 128*time.Millisecond, false}, // contact lost within
		{2*time.Minute + 200*time.Millisecond, 2*time.Minute + 400*time.Millisecond, true},
		{2*time.Minute + time.Second, 2*time.Minute + 1200*time.Millisecond, false}, // and regained
		{9 * time.Minute, 9*time.Minute + 64*time.Millisecond, true},
	} {
		sp := w.Span(c.t0, c.t1)
		for k, at := range []time.Duration{c.t0, c.t1} {
			s := w.At(at)
			if sp.Intensity[k] != s.Intensity || sp.StepPhase[k] != s.StepPhase || sp.RespPhase[k] != s.RespPhase {
				t.Errorf("Span(%v, %v) end %d = %v, %v, %v; At gives %v, %v, %v", c.t0, c.t1, k,
					sp.Intensity[k], sp.StepPhase[k], sp.RespPhase[k], s.Intensity, s.StepPhase, s.RespPhase)
			}
		}
		if on := w.At(c.t0).Contact; sp.Contact != on || sp.Steady != c.steady {
			t.Errorf("Span(%v, %v): contact %v, steady %v; want %v, %v", c.t0, c.t1, sp.Contact, sp.Steady, on, c.steady)
		}
	}
}

// A wearer's track is the same whether each tick takes the previous tick's
// turn toward the posture (at rest) or computes it.
func TestTurnReusedOnlyWhenInputsRepeat(t *testing.T) {
	sc := mustScenario(t, `
segments:
  - rest: 12s
  - walk: 8s
  - rest: 1h
events:
  - at: 3s
    posture: sitting
  - at: 6s
    posture: lying-back
  - at: 9s
    posture: standing
  - at: 25s
    posture: table
`)
	w, fresh := New(5, sc, 0), New(5, sc, 0)
	for i := int64(1); i <= int64(40*time.Second/Tick); i++ {
		w.ensure(i)
		fresh.turn = turn{} // nothing to take: computed
		fresh.ensure(i)
		a, b := w.ticks[i%trackLen], fresh.ticks[i%trackLen]
		if !sameQuat(a.orient, b.orient) || a.omega != b.omega {
			t.Fatalf("tick %d: orientation %v, angular velocity %v; computed: %v, %v", i, a.orient, a.omega, b.orient, b.omega)
		}
	}
}

func TestDeterministicWhateverTheOrder(t *testing.T) {
	sc := mustScenario(t, walkScenario)
	a, b := New(7, sc, 0), New(7, sc, 0)
	ma := make([]Motion, 50)
	mb := make([]Motion, 50)
	a.FillMotion(ma, 3*time.Minute, 10*time.Millisecond)
	b.At(9 * time.Minute) // b computes further ahead first
	b.FillMotion(mb, 3*time.Minute, 10*time.Millisecond)
	for i := range ma {
		if ma[i] != mb[i] {
			t.Fatalf("sample %d differs: %+v vs %+v", i, ma[i], mb[i])
		}
	}
	c := New(8, sc, 0)
	c.FillMotion(mb, 3*time.Minute, 10*time.Millisecond)
	if ma[10] == mb[10] {
		t.Error("another seed gives the same motion")
	}
}

func TestGravityPerPosture(t *testing.T) {
	tests := []struct {
		p    Posture
		axis func(Vec3) float64
	}{
		{Standing, func(v Vec3) float64 { return -v.X }},
		{LyingBack, func(v Vec3) float64 { return v.Z }},
		{LyingFront, func(v Vec3) float64 { return -v.Z }},
		{Table, func(v Vec3) float64 { return v.Z }},
	}
	for _, tt := range tests {
		sc := DefaultScenario()
		sc.Start.Posture = tt.p
		w := New(1, sc, 0)
		m := make([]Motion, 1)
		w.FillMotion(m, time.Second, 0)
		if g := tt.axis(m[0].Force); math.Abs(g-G) > 1e-6 || math.Abs(m[0].Force.Norm()-G) > 1e-6 {
			t.Errorf("%s: force %+v", tt.p, m[0].Force)
		}
		if n := m[0].Field.Norm(); math.Abs(n-50) > 0.1 {
			t.Errorf("%s: field %.2f uT, want 50", tt.p, n)
		}
	}
}

func TestEventsShapeTheMotion(t *testing.T) {
	w := New(3, mustScenario(t, walkScenario), 0)
	m := make([]Motion, 1)
	at := func(d time.Duration) Motion { w.FillMotion(m, d, 0); return m[0] }
	if f := at(30*time.Second + 7*time.Millisecond).Force.Norm(); f < 2.5*G {
		t.Errorf("tap peak force %.1f", f)
	}
	if f := at(50*time.Second + 200*time.Millisecond).Force.Norm(); f != 0 {
		t.Errorf("force in free fall %.3f, want 0", f)
	}
	if f := at(50*time.Second + 512*time.Millisecond).Force.Norm(); f < 4*G {
		t.Errorf("impact force %.1f", f)
	}
	if !w.At(50*time.Second + 200*time.Millisecond).Moving {
		t.Error("not moving during a fall")
	}
	if w.At(100 * time.Second).Moving {
		t.Error("moving at rest")
	}
	if !w.At(4 * time.Minute).Moving {
		t.Error("not moving while walking")
	}
	if !w.Contact(14*time.Minute) || w.Contact(15*time.Minute+time.Second) {
		t.Error("gear off at 15m not seen")
	}
	st := w.At(20 * time.Minute)
	if st.Posture != LyingBack || st.SkinTemp > 303 {
		t.Errorf("at 20m posture %s, skin temperature %.1f K (gear off: falls toward ambient)", st.Posture, st.SkinTemp)
	}
	if got := len(w.Events(0, time.Hour)); got != 5 {
		t.Errorf("%d events, want 5", got)
	}
}

func TestWalkingHasStepRhythm(t *testing.T) {
	w := New(4, mustScenario(t, walkScenario), 0)
	const n = 1040 // 10 s at 104 Hz
	m := make([]Motion, n)
	w.FillMotion(m, 4*time.Minute, time.Second/104)
	// count upward crossings of the mean of the vertical (device -x) axis
	var mean float64
	for _, s := range m {
		mean += -s.Force.X
	}
	mean /= n
	cross := 0
	for i := 1; i < n; i++ {
		if -m[i-1].Force.X < mean && -m[i].Force.X >= mean {
			cross++
		}
	}
	if cross < 14 || cross > 24 {
		t.Errorf("%d steps in 10 s of walking at 110 steps/min", cross)
	}
}

func TestInjectRecomputes(t *testing.T) {
	w := New(5, nil, time.Minute) // the scenario starts at clock reading 1m
	before := w.At(3 * time.Minute).HeartRate
	w.At(5 * time.Minute)
	w.Inject(Event{At: 2 * time.Minute, Kind: SetActivity, Activity: Run})
	if after := w.At(3 * time.Minute).HeartRate; after < before+15 {
		t.Errorf("heart rate a minute into an injected run %.1f, before %.1f", after, before)
	}
	w.Inject(Event{At: 4 * time.Minute, Kind: Gear, On: false})
	if w.Contact(4*time.Minute + time.Second) {
		t.Error("injected gear off not seen")
	}
}

func TestLoopRepeats(t *testing.T) {
	sc := mustScenario(t, "segments:\n  - rest: 1m\n  - walk: 1m\nevents:\n  - at: 30s\n    tap: {}\nloop: true\n")
	w := New(1, sc, 0)
	if w.At(150*time.Second).Activity != Rest || w.At(210*time.Second).Activity != Walk {
		t.Error("segments do not repeat")
	}
	if n := len(w.Events(0, 10*time.Minute)); n != 5 {
		t.Errorf("%d taps in 10 minutes of a 2-minute loop, want 5", n)
	}
}

func TestParseScenarioErrors(t *testing.T) {
	tests := []struct{ doc, msg string }{
		{"segments:\n  - swim: 1m\n", "unknown key swim"},
		{"segments:\n  - walk: soon\n", "not a duration"},
		{"segments:\n  - walk: -1m\n", "must be positive"},
		{"segments:\n  - walk: 1m\n    heartRate: 500\n", "30..220"},
		{"segments:\n  - walk: 1m\n    run: 1m\n", "one activity"},
		{"events:\n  - tap: {}\n", "an event has at"},
		{"events:\n  - at: 1m\n    tap: {}\n    gear: off\n", "exactly one"},
		{"events:\n  - at: 1m\n    gear: maybe\n", "on or off"},
		{"events:\n  - at: 1m\n    battery: 150%\n", "0%..100%"},
		{"events:\n  - at: 1m\n    posture: upside-down\n", "unknown posture"},
		{"events:\n  - at: 1m\n    freeFall: 10s\n", "50ms to 3s"},
		{"start:\n  ambient: 500K\n", "233..398"},
		{"colour: blue\n", "unknown setting colour"},
		{"loop: true\n", "loop needs segments"},
		{"segments: [unclosed\n", "yaml"},
	}
	for _, tt := range tests {
		_, err := ParseScenario([]byte(tt.doc))
		if err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%q: %v, want containing %q", tt.doc, err, tt.msg)
		}
	}
	sc := mustScenario(t, "start:\n  battery: 15%\n  ambient: 22C\n  gear: off\nevents:\n  - at: '6:10'\n    doubleTap: {}\n")
	if sc.Start.Battery != 0.15 || math.Abs(sc.Start.Ambient-295.15) > 1e-9 || sc.Start.Gear || sc.Events[0].At != 6*time.Minute+10*time.Second {
		t.Errorf("parsed %+v", sc)
	}
}

func FuzzParseScenario(f *testing.F) {
	f.Add([]byte(walkScenario))
	f.Add([]byte("segments:\n  - walk: 1m\nloop: true\n"))
	f.Add([]byte("events:\n  - at: '1:05'\n    shake: 2s\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseScenario(data)
		if err != nil {
			return
		}
		w := New(1, sc, 0)
		m := make([]Motion, 4)
		w.FillMotion(m, sc.Length()/2, time.Millisecond)
		for _, s := range m {
			if math.IsNaN(s.Force.X + s.Force.Y + s.Force.Z + s.Rate.X + s.Field.Z) {
				t.Fatalf("NaN motion for %q", data)
			}
		}
		if hr := w.At(sc.Length()).HeartRate; !(hr > 20 && hr < 260) {
			t.Fatalf("heart rate %v", hr)
		}
	})
}

func BenchmarkFillMotion(b *testing.B) {
	w := New(1, mustScenario(b, walkScenario), 0)
	m := make([]Motion, 8)
	t := 3 * time.Minute
	b.ReportAllocs()
	for b.Loop() {
		w.FillMotion(m, t, time.Second/1666)
		t += 8 * time.Second / 1666
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*8), "ns/sample")
}

// Streams that read the wearer as the device's do, each a batch behind the
// latest, with the ECG's beats asked for BeatsAhead past its batch, compute
// each tick of the track once: the ring holds what they read. The track
// computes a tick again only when a read asks for one before the ticks it
// keeps (lo to hi) and it starts again from a checkpoint (restart); so
// each read finds the first tick it asks for kept, or ahead of those kept.
func TestTrackComputedOnceForStreams(t *testing.T) {
	for _, name := range []string{"rest", "walk"} {
		sc := DefaultScenario()
		if name == "walk" {
			sc = mustScenario(t, walkScenario)
		}
		w := New(3, sc, 0)
		// the heart rate's batch at 256 Hz, the ECG's at 125 Hz and IMU6's at 52 Hz
		batches := []struct{ n, rate int }{{64, 256}, {16, 125}, {4, 52}}
		next := make([]int64, len(batches))
		motion := make([]Motion, 4)
		const end = 60 * time.Second
		held := func(read string, at time.Duration) { // the ring holds what read asks for, from at on
			t.Helper()
			if i := int64(at / Tick); w.lo <= w.hi && i < w.lo {
				t.Fatalf("%s: %s at %v asks for tick %d, before the ticks kept, %d to %d: the track starts again and computes them twice", name, read, at, i, w.lo, w.hi)
			}
		}
		for {
			// the batch that ends first runs first, as the clock runs them
			j := 0
			for i, b := range batches {
				if time.Duration(next[i]+int64(b.n)-1)*time.Second/time.Duration(b.rate) < time.Duration(next[j]+int64(batches[j].n)-1)*time.Second/time.Duration(batches[j].rate) {
					j = i
				}
			}
			b := batches[j]
			dt := time.Second / time.Duration(b.rate)
			t0 := time.Duration(next[j]) * time.Second / time.Duration(b.rate)
			t1 := t0 + time.Duration(b.n-1)*dt
			if t1 > end {
				break
			}
			next[j] += int64(b.n)
			if b.rate == 52 {
				held("FillMotion", t0)
				w.FillMotion(motion, t0, dt)
				continue
			}
			if n := len(w.beats); n > 0 { // the beats go on from the last one kept
				held("AppendBeats", w.beats[n-1].At-w.origin)
			}
			w.AppendBeats(nil, t0-time.Second, t1+BeatsAhead)
			w.NextBeat(t1 + BeatsAhead)
			held("Span", t0)
			w.Span(t0, t1)
		}
		// the track runs past the end by the beats' look-ahead, and a beat
		if max := int64((end + BeatsAhead + 2*time.Second) / Tick); w.hi > max {
			t.Errorf("%s: the track ran to tick %d for %v of streams; want at most %d", name, w.hi, end, max)
		}
	}
}

// Nlerp, which the readers of the track interpolate with, stays within
// 1.1e-7 rad of Slerp across the largest turn of a tick.
func TestNlerpMatchesSlerpWithinATick(t *testing.T) {
	const turn = turnRate * float64(Tick) / float64(time.Second)
	for _, p := range []Posture{Sitting, LyingBack, LyingFront, Table} {
		q := postureOrient(Standing, 0.3)
		goal := postureOrient(p, 0.3)
		r := Slerp(q, goal, math.Min(1, turn/Angle(q, goal)))
		for f := 0.0; f <= 1; f += 1.0 / 64 {
			if d := Angle(Nlerp(q, r, f), Slerp(q, r, f)); d > 1.1e-7 {
				t.Errorf("%s, %v of a tick's turn: Nlerp is %.3g rad from Slerp", p, f, d)
			}
		}
	}
}

// A read after an injection, whose tick's successor is a checkpoint kept
// from before the injection, gives what a wearer that never read before
// gives: the track starts again at or before the tick read, not at the
// checkpoint after it with the tick read left over from earlier reads.
func TestTrackAfterInjectBesideACheckpoint(t *testing.T) {
	tap := Event{At: 19 * time.Second, Kind: Tap}
	at := time.Duration(cpEvery-1)*Tick + Tick/2 // between the tick before a checkpoint and the checkpoint
	read := New(7, nil, 0)
	read.At(20 * time.Second)        // checkpoints at 10 s and 20 s
	read.At(9500 * time.Millisecond) // the ring holds the ticks before 10 s
	read.Inject(tap)
	fresh := New(7, nil, 0)
	fresh.Inject(tap)
	if got, want := read.At(at), fresh.At(at); got != want {
		t.Errorf("at %v after reads and an injection: %+v\nwant, as without the reads: %+v", at, got, want)
	}
}

// A wearer whose scenario has no momentary events sees one of each kind
// injected after it has been read: a batch of motion and a contact check
// look for events only of the kinds the wearer has, and an injection adds
// its kind. Each kind is injected alone, so that none stands in for another.
func TestInjectedEventOfEachKindIsSeen(t *testing.T) {
	const origin = time.Minute
	at := origin + 30*time.Second
	t0, t1 := at-time.Second, at+3*time.Second
	motion := func(w *Wearer) []Motion {
		m := make([]Motion, 4*104)
		w.FillMotion(m, t0, time.Second/104)
		return m
	}
	for _, tt := range []struct {
		name   string
		events []Event
		motion bool // the batch of motion changes; otherwise contact is not steady
	}{
		{"tap", []Event{{At: at, Kind: Tap}}, true},
		{"double tap", []Event{{At: at, Kind: DoubleTap}}, true},
		{"free fall", []Event{{At: at, Kind: FreeFall, Duration: 500 * time.Millisecond}}, true},
		{"shake", []Event{{At: at, Kind: Shake, Duration: time.Second}}, true},
		{"gear off and on", []Event{{At: at, Kind: Gear, On: false}, {At: at + time.Second, Kind: Gear, On: true}}, false},
		{"contact loss", []Event{{At: at, Kind: ContactLoss, Duration: time.Second}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := New(8, nil, origin)
			before := motion(w)
			if sp := w.Span(t0, t1); !sp.Contact || !sp.Steady {
				t.Fatalf("before the injection: contact %v, steady %v; want on and steady", sp.Contact, sp.Steady)
			}
			for _, e := range tt.events {
				w.Inject(e)
			}
			if tt.motion {
				if after := motion(w); slices.Equal(after, before) {
					t.Errorf("the motion around an injected %s is the motion without it", tt.name)
				}
				return
			}
			if sp := w.Span(t0, t1); !sp.Contact || sp.Steady {
				t.Errorf("around an injected %s: contact %v, steady %v; want on and not steady", tt.name, sp.Contact, sp.Steady)
			}
		})
	}
}

// What every read of a wearer takes first lies in one cache line of 64
// bytes: a fleet's wearers meet their reads cold.
func TestWearerReadsOneCacheLine(t *testing.T) {
	var w Wearer
	for _, f := range []struct {
		name      string
		off, size uintptr
	}{
		{"mu", unsafe.Offsetof(w.mu), unsafe.Sizeof(w.mu)},
		{"origin", unsafe.Offsetof(w.origin), unsafe.Sizeof(w.origin)},
		{"ticks", unsafe.Offsetof(w.ticks), unsafe.Sizeof(w.ticks)},
		{"lo", unsafe.Offsetof(w.lo), unsafe.Sizeof(w.lo)},
		{"hi", unsafe.Offsetof(w.hi), unsafe.Sizeof(w.hi)},
		{"kinds", unsafe.Offsetof(w.kinds), unsafe.Sizeof(w.kinds)},
		{"sc", unsafe.Offsetof(w.sc), unsafe.Sizeof(w.sc)},
		{"injections", unsafe.Offsetof(w.injections), unsafe.Sizeof(w.injections)},
	} {
		if end := f.off + f.size; end > 64 {
			t.Errorf("Wearer.%s ends at byte %d; want at most 64", f.name, end)
		}
	}
}
