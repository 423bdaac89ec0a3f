package signal

import (
	"fmt"
	"math"
	"testing"
)

type sample struct{ x, y, z float64 }

func run(d *MotionDetector, s []sample) (events []MotionEvent, at []int) {
	for i, v := range s {
		d.Feed(v.x, v.y, v.z)
		for {
			e, ok := d.Pop()
			if !ok {
				break
			}
			events, at = append(events, e), append(at, i)
		}
	}
	return events, at
}

// still returns n samples of a device at rest with gravity on -x.
func still(n int) []sample {
	s := make([]sample, n)
	for i := range s {
		s[i] = sample{-9.80665, 0.01 * math.Sin(float64(i)), 0}
	}
	return s
}

func knock(s []sample, at int, amp float64) {
	for k := range 6 { // 15 ms at 416 Hz
		s[at+k].z -= amp * math.Sin(math.Pi*float64(k+1)/7)
	}
}

func TestTapAndDoubleTap(t *testing.T) {
	s := still(3 * DetectorRate)
	knock(s, 200, 3.5*9.80665)
	knock(s, 800, 3.5*9.80665)
	knock(s, 800+104, 3.5*9.80665) // 250 ms later
	ev, at := run(NewMotionDetector(DetectorRate), s)
	var taps, doubles int
	for i, e := range ev {
		switch e {
		case Tap:
			taps++
			if !(at[i] > 200 && at[i] < 200+100 || at[i] > 800 && at[i] < 1000) {
				t.Errorf("tap reported at sample %d", at[i])
			}
		case DoubleTap:
			doubles++
		}
	}
	if taps != 3 || doubles != 1 {
		t.Errorf("events %v: want 3 taps and 1 double tap", ev)
	}
}

func TestFreeFall(t *testing.T) {
	s := still(2 * DetectorRate)
	start := DetectorRate / 2
	for i := start; i < start+166; i++ { // 400 ms
		s[i] = sample{0.02, 0.01, -0.03}
	}
	for k := range 10 { // impact
		s[start+166+k].x -= 60 * math.Sin(math.Pi*float64(k+1)/11)
	}
	ev, at := run(NewMotionDetector(DetectorRate), s)
	var fall, end = -1, -1
	for i, e := range ev {
		switch e {
		case FreeFallStart:
			fall = at[i]
		case FreeFallEnd:
			end = at[i]
		case Tap, DoubleTap:
			t.Errorf("%v reported in a fall at sample %d", e, at[i])
		}
	}
	if fall < 0 || float64(fall-start)/DetectorRate > 0.1 {
		t.Errorf("free fall detected at sample %d, start %d: want within 100 ms", fall, start)
	}
	if end < start+166 || end > start+180 {
		t.Errorf("free fall ended at sample %d", end)
	}
}

func TestMovementStartsAndStops(t *testing.T) {
	s := still(12 * DetectorRate)
	for i := 2 * DetectorRate; i < 6*DetectorRate; i++ { // walking rhythm
		s[i].x += 2.5 * math.Sin(2*math.Pi*1.8*float64(i)/DetectorRate)
	}
	ev, at := run(NewMotionDetector(DetectorRate), s)
	if len(ev) != 2 || ev[0] != MovementStart || ev[1] != MovementStop {
		t.Fatalf("events %v", ev)
	}
	if sec := float64(at[0]) / DetectorRate; sec < 2 || sec > 3 {
		t.Errorf("movement started at %.2f s", sec)
	}
	if sec := float64(at[1]) / DetectorRate; sec < 7.5 || sec > 10 {
		t.Errorf("movement stopped at %.2f s", sec)
	}
}

func BenchmarkMotionDetector(b *testing.B) {
	d := NewMotionDetector(DetectorRate)
	i := 0.0
	b.ReportAllocs()
	for b.Loop() {
		d.Feed(-9.8+math.Sin(i), 0, 0)
		d.Pop()
		i += 0.01
	}
}

// tapDelay is the number of samples from a tap's jolt to its report at
// DetectorRate: the shock, then the quiet time without another jolt.
var tapDelay = int(math.Round(TapShock*DetectorRate) + math.Round(TapQuiet*DetectorRate))

// TestTapOnEachAxis jolts a device resting on each axis, along that axis:
// a knock, a sharp drop that recovers slowly (one jolt, then steps each
// below TapJolt), and a bump smaller than TapJolt. Only the change between
// samples counts, not the level it starts from, so the knocks and the drop
// are taps and the bump is none, on every axis. A jolt must be more than
// TapJolt. The tap is reported tapDelay samples after its jolt.
func TestTapOnEachAxis(t *testing.T) {
	const g = 9.80665
	var knock []float64
	for k := range 6 { // 15 ms at 416 Hz
		knock = append(knock, -3.5*g*math.Sin(math.Pi*float64(k+1)/7))
	}
	tests := []struct {
		name       string
		down, axis int // where gravity is and the jolt goes: 0 x, 1 y, 2 z
		shape      []float64
		tap        bool
	}{
		{"knock on x", 0, 0, knock, true},
		{"knock on y", 1, 1, knock, true},
		{"knock on z", 2, 2, knock, true},
		{"knock on y lying on x", 0, 1, knock, true},
		{"drop on x", 0, 0, []float64{-6, -5, -4, -3, -2, -1}, true},
		{"drop on y", 1, 1, []float64{-6, -5, -4, -3, -2, -1}, true},
		{"drop on z", 2, 2, []float64{-6, -5, -4, -3, -2, -1}, true},
		{"a jolt of exactly TapJolt", 2, 0, []float64{TapJolt}, false},
		{"a jolt just over TapJolt", 2, 0, []float64{math.Nextafter(TapJolt, 10)}, true},
		{"bump on x", 0, 0, []float64{4}, false},
		{"bump on y", 1, 1, []float64{4}, false},
		{"bump on z", 2, 2, []float64{4}, false},
	}
	for _, tt := range tests {
		s := make([]sample, 2*DetectorRate)
		for i := range s {
			var v [3]float64
			v[tt.down] = g
			if k := i - 300; k >= 0 && k < len(tt.shape) {
				v[tt.axis] += tt.shape[k]
			}
			s[i] = sample{v[0], v[1], v[2]}
		}
		ev, at := run(NewMotionDetector(DetectorRate), s)
		if tt.tap && (len(ev) != 1 || ev[0] != Tap || at[0] != 300+tapDelay) {
			t.Errorf("%s: events %v at samples %v, want one tap at %d", tt.name, ev, at, 300+tapDelay)
		}
		if !tt.tap && len(ev) != 0 {
			t.Errorf("%s: events %v at samples %v, want none", tt.name, ev, at)
		}
	}
}

// rest returns n samples of a device at rest with gravity on axis down
// (0 x, 1 y, 2 z), pointing the positive way.
func rest(n, down int) []sample {
	s := make([]sample, n)
	for i := range s {
		var v [3]float64
		v[down] = 9.80665
		s[i] = sample{v[0], v[1], v[2]}
	}
	return s
}

// fall puts a free fall (a magnitude of about 0.04 m/s^2) on samples
// from..to-1.
func fall(s []sample, from, to int) {
	for i := from; i < to; i++ {
		s[i] = sample{0.02, 0.03, -0.01}
	}
}

// at returns the samples at which events of kind e were reported.
func at(ev []MotionEvent, samples []int, e MotionEvent) []int {
	var out []int
	for i, x := range ev {
		if x == e {
			out = append(out, samples[i])
		}
	}
	return out
}

// TestFreeFallTiming: a free fall starts on the sample that makes FallFor
// of samples below FallBelow, and ends on the first sample above
// FallAbove, whichever axis gravity and the impact are on, from the first
// sample on, and for a second fall alike. A magnitude at FallBelow is no
// fall, and one at FallAbove ends none.
func TestFreeFallTiming(t *testing.T) {
	fallFor := int(math.Round(FallFor * DetectorRate))
	if m := math.Sqrt(FallBelow * FallBelow); m != FallBelow {
		t.Fatalf("the magnitude of (FallBelow, 0, 0) is %v, not FallBelow", m)
	}
	tests := []struct {
		name       string
		s          func() []sample
		start, end []int
	}{
		{"on x", func() []sample { s := rest(600, 0); fall(s, 200, 300); return s }, []int{199 + fallFor}, []int{300}},
		{"on y", func() []sample { s := rest(600, 1); fall(s, 200, 300); return s }, []int{199 + fallFor}, []int{300}},
		{"on z", func() []sample { s := rest(600, 2); fall(s, 200, 300); return s }, []int{199 + fallFor}, []int{300}},
		{"from the first sample", func() []sample { s := rest(600, 2); fall(s, 0, 100); return s }, []int{fallFor - 1}, []int{100}},
		{"twice", func() []sample { s := rest(900, 2); fall(s, 200, 300); fall(s, 600, 700); return s },
			[]int{199 + fallFor, 599 + fallFor}, []int{300, 700}},
		{"one sample short", func() []sample { s := rest(600, 2); fall(s, 200, 199+fallFor); return s }, nil, nil},
		{"at FallBelow", func() []sample {
			s := rest(600, 2)
			for i := 200; i < 300; i++ {
				s[i] = sample{FallBelow, 0, 0}
			}
			return s
		}, nil, nil},
		{"just below FallBelow", func() []sample {
			s := rest(600, 2)
			for i := 200; i < 300; i++ {
				s[i] = sample{math.Nextafter(FallBelow, 0), 0, 0}
			}
			return s
		}, []int{199 + fallFor}, []int{300}},
		{"at FallAbove, then above", func() []sample {
			s := rest(600, 2)
			fall(s, 200, 300)
			for i := 300; i < 400; i++ {
				s[i] = sample{FallAbove, 0, 0}
			}
			return s
		}, []int{199 + fallFor}, []int{400}},
	}
	for _, tt := range tests {
		ev, samples := run(NewMotionDetector(DetectorRate), tt.s())
		start, end := at(ev, samples, FreeFallStart), at(ev, samples, FreeFallEnd)
		if fmt.Sprint(start, end) != fmt.Sprint(tt.start, tt.end) {
			t.Errorf("%s: falls start at %v and end at %v, want %v and %v", tt.name, start, end, tt.start, tt.end)
		}
	}
}

// TestTapAfterAFall: jolts within half a second of a fall's end are the
// impact's, not taps; from then on they are taps.
func TestTapAfterAFall(t *testing.T) {
	half := int(math.Round(0.5 * DetectorRate))
	for _, tt := range []struct {
		after int // samples from the fall's end to the jolt
		tap   bool
	}{{half, false}, {half + 1, true}} {
		s := rest(1200, 2)
		fall(s, 200, 300)
		for i := 300 + tt.after; i < len(s); i++ { // one jolt: a step that stays
			s[i].x += 6
		}
		ev, samples := run(NewMotionDetector(DetectorRate), s)
		taps := at(ev, samples, Tap)
		if tt.tap != (len(taps) == 1) || len(taps) > 1 {
			t.Errorf("a jolt %d samples after a fall: taps at %v, want a tap %v", tt.after, taps, tt.tap)
		}
	}
}

// TestDoubleTapGap: two taps DoubleTapMax apart are a double tap, one
// sample more apart they are two taps.
func TestDoubleTapGap(t *testing.T) {
	most := int(math.Round(DoubleTapMax * DetectorRate))
	if gap := float64(most) * (1 / float64(DetectorRate)); gap != DoubleTapMax {
		t.Fatalf("%d samples are %v s, not DoubleTapMax", most, gap)
	}
	for _, tt := range []struct {
		gap    int
		double bool
	}{{most, true}, {most + 1, false}, {most / 2, true}} {
		s := rest(1500, 2)
		s[300].x += 6
		s[300+tt.gap].x += 6
		ev, samples := run(NewMotionDetector(DetectorRate), s)
		taps, doubles := at(ev, samples, Tap), at(ev, samples, DoubleTap)
		if len(taps) != 2 || tt.double != (len(doubles) == 1) || len(doubles) > 1 {
			t.Errorf("taps %d samples apart: taps at %v, double taps at %v; want 2 taps, a double tap %v", tt.gap, taps, doubles, tt.double)
		}
	}
}

// TestMovementOfAStep: the magnitude steps up and stays there. The
// deviation from the slow mean (a time constant of 2 s) rises through
// MoveAbove within its half-second average, then decays with the slow
// mean: below MoveBelow after about 2 s times ln(step/MoveBelow), and
// movement stops StillFor later.
func TestMovementOfAStep(t *testing.T) {
	for _, tt := range []struct {
		step                   float64
		startWithin, stopAfter float64 // seconds after the step
		stopBefore             float64
	}{
		{1, 0.5, 4, 6.5},
		{1.5, 0.5, 5, 7},
	} {
		s := rest(14*DetectorRate, 2)
		for i := 2 * DetectorRate; i < len(s); i++ {
			s[i].z += tt.step
		}
		ev, samples := run(NewMotionDetector(DetectorRate), s)
		sec := func(i int) float64 { return float64(samples[i]-2*DetectorRate) / DetectorRate }
		if len(ev) != 2 || ev[0] != MovementStart || ev[1] != MovementStop {
			t.Errorf("a step of %v: events %v", tt.step, ev)
			continue
		}
		if sec(0) > tt.startWithin || sec(1) < tt.stopAfter || sec(1) > tt.stopBefore {
			t.Errorf("a step of %v: moving from %.2f s to %.2f s after it, want from within %v s, to between %v and %v s",
				tt.step, sec(0), sec(1), tt.startWithin, tt.stopAfter, tt.stopBefore)
		}
	}
}
