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

func BenchmarkNormal(b *testing.B) {
	var s float64
	i := uint64(0)
	for b.Loop() {
		s += Normal(Key(1, 2, i))
		i++
	}
	_ = s
}
