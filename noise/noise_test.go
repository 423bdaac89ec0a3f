package noise

import (
	"math"
	"testing"
)

func TestGaussMoments(t *testing.T) {
	const n = 200000
	var sum, sq float64
	for i := range uint64(n) {
		g := Gauss(Key(7, 1, i))
		sum += g
		sq += g * g
	}
	mean, sd := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n))
	if math.Abs(mean) > 0.01 || math.Abs(sd-1) > 0.01 {
		t.Errorf("mean %.4f, sd %.4f; want 0 and 1", mean, sd)
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

func TestNormalMoments(t *testing.T) {
	const n = 200000
	var sum, sq float64
	for i := range uint64(n) {
		g := Normal(Key(9, 1, i))
		sum += g
		sq += g * g
	}
	mean, sd := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n))
	if math.Abs(mean) > 0.01 || math.Abs(sd-1) > 0.01 {
		t.Errorf("mean %.4f, sd %.4f; want 0 and 1", mean, sd)
	}
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
