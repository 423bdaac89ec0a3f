package signal

import (
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

// TestTapOnEachAxis jolts a device resting on each axis, along that axis:
// a knock, a sharp drop that recovers slowly (one jolt, then steps each
// below TapJolt), and a bump smaller than TapJolt. Only the change between
// samples counts, not the level it starts from, so the knocks and the drop
// are taps and the bump is none, on every axis.
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
		if tt.tap && (len(ev) != 1 || ev[0] != Tap || at[0] <= 300 || at[0] >= 400) {
			t.Errorf("%s: events %v at samples %v, want one tap between 300 and 400", tt.name, ev, at)
		}
		if !tt.tap && len(ev) != 0 {
			t.Errorf("%s: events %v at samples %v, want none", tt.name, ev, at)
		}
	}
}
