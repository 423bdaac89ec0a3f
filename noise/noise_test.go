package noise

import (
	"math"
	"testing"
)

func TestMoments(t *testing.T) {
	for _, tt := range []struct {
		name string
		f    func(uint64) float64
		seed uint64
	}{{"Gauss", Gauss, 7}, {"Normal", Normal, 9}} {
		const n = 200000
		var sum, sq float64
		for i := range uint64(n) {
			g := tt.f(Key(tt.seed, 1, i))
			sum += g
			sq += g * g
		}
		mean, sd := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n))
		if math.Abs(mean) > 0.01 || math.Abs(sd-1) > 0.01 {
			t.Errorf("%s: mean %.4f, sd %.4f; want 0 and 1", tt.name, mean, sd)
		}
	}
}

// The numbers of a Stream at the sample times of a sensor (indexes a fixed
// step apart, as nanoseconds are) have a standard normal's moments, no
// correlation from one sample to the next, and none with another stream's
// at the same times.
func TestStreamMoments(t *testing.T) {
	for _, step := range []uint64{1, 3906250, 8000000, 19230769} { // 256, 125 and 52 Hz in ns
		a, b := NewStream(9, 100), NewStream(9, 101)
		const n = 200000
		var sum, sq, lag, cross, prev float64
		for i := range uint64(n) {
			x, y := Normal(a.Key(i*step)), Normal(b.Key(i*step))
			sum += x
			sq += x * x
			lag += x * prev
			cross += x * y
			prev = x
		}
		mean, sd := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n))
		if math.Abs(mean) > 0.01 || math.Abs(sd-1) > 0.01 {
			t.Errorf("step %d: mean %.4f, sd %.4f; want 0 and 1", step, mean, sd)
		}
		// the correlations of n independent pairs spread by 1/sqrt(n), 0.0022
		if r := lag / n; math.Abs(r) > 0.01 {
			t.Errorf("step %d: correlation %.4f from one index to the next; want 0", step, r)
		}
		if r := cross / n; math.Abs(r) > 0.01 {
			t.Errorf("step %d: correlation %.4f between two streams; want 0", step, r)
		}
	}
	if NewStream(1, 2).Key(3) != NewStream(1, 2).Key(3) {
		t.Error("same stream and index, different keys")
	}
	if NewStream(1, 2) == NewStream(1, 3) || NewStream(1, 2) == NewStream(2, 2) {
		t.Error("streams collide")
	}
}

func TestDeterministicAndDistinct(t *testing.T) {
	if Gauss(Key(1, 2, 3)) != Gauss(Key(1, 2, 3)) {
		t.Error("same key, different values")
	}
	if Key(1, 2, 3) == Key(1, 3, 2) || Key(1, 2, 3) == Key(2, 2, 3) {
		t.Error("keys collide")
	}
	for i := range uint64(1000) {
		if u := Uniform(i); u < 0 || u >= 1 {
			t.Fatalf("Uniform(%d) = %v", i, u)
		}
	}
}

func BenchmarkGauss(b *testing.B) {
	var s float64
	i := uint64(0)
	for b.Loop() {
		s += Gauss(Key(1, 2, i))
		i++
	}
	_ = s
}

func BenchmarkNormalStream(b *testing.B) {
	var s float64
	st := NewStream(1, 2)
	i := uint64(0)
	for b.Loop() {
		s += Normal(st.Key(i))
		i++
	}
	_ = s
}

func BenchmarkNormal(b *testing.B) {
	var s float64
	i := uint64(0)
	for b.Loop() {
		s += Normal(Key(1, 2, i))
		i++
	}
	_ = s
}
