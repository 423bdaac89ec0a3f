package signal

import (
	"math"
	"strings"
	"testing"
)

func db(g float64) float64 { return 20 * math.Log10(g) }

func TestButterworthResponse(t *testing.T) {
	tests := []struct {
		kind         Kind
		order        int
		fc, fs       float64
		pass, stop   float64 // frequencies
		minStopAtten float64 // dB
	}{
		{LowPass, 2, 40, 256, 5, 120, 15},
		{LowPass, 4, 100, 512, 20, 240, 25},
		{LowPass, 2, 150, 500, 20, 245, 25},
		{HighPass, 2, 0.5, 200, 10, 0.05, 35},
		{HighPass, 2, 5, 250, 40, 0.5, 35},
	}
	for _, tt := range tests {
		c, err := Butterworth(tt.kind, tt.order, tt.fc, tt.fs)
		if err != nil {
			t.Fatal(err)
		}
		if g := db(c.Response(tt.fc, tt.fs)); math.Abs(g+3.01) > 0.05 {
			t.Errorf("%v order %d fc %g: %.2f dB at the cut-off, want -3.01", tt.kind, tt.order, tt.fc, g)
		}
		if g := db(c.Response(tt.pass, tt.fs)); math.Abs(g) > 0.5 {
			t.Errorf("%v fc %g: %.2f dB in the pass band at %g Hz", tt.kind, tt.fc, g, tt.pass)
		}
		if g := db(c.Response(tt.stop, tt.fs)); g > -tt.minStopAtten {
			t.Errorf("%v fc %g: %.2f dB in the stop band at %g Hz, want below -%g", tt.kind, tt.fc, g, tt.stop, tt.minStopAtten)
		}
	}
}

// The filter's time-domain output matches its designed response.
func TestFilterSineGain(t *testing.T) {
	c, _ := Butterworth(LowPass, 2, 40, 512)
	const fs = 512.0
	for _, f := range []float64{10, 40, 100} {
		c.Reset()
		var peak float64
		for n := range 4096 {
			y := c.Step(math.Sin(2 * math.Pi * f * float64(n) / fs))
			if n > 2048 {
				peak = math.Max(peak, math.Abs(y))
			}
		}
		if want := c.Response(f, fs); math.Abs(peak-want) > 0.01 {
			t.Errorf("%g Hz: amplitude %.4f, designed gain %.4f", f, peak, want)
		}
	}
}

func TestHighPassRemovesOffsetAndSettle(t *testing.T) {
	c, _ := Butterworth(HighPass, 2, 0.5, 250)
	var y float64
	for range 5000 {
		y = c.Step(1000)
	}
	if math.Abs(y) > 1e-6 {
		t.Errorf("high-pass output %.6f after 20 s of a constant", y)
	}
	l, _ := Butterworth(LowPass, 4, 40, 250)
	l.Settle(3)
	if y := l.Step(3); math.Abs(y-3) > 1e-9 {
		t.Errorf("settled low-pass gives %v for its steady input 3", y)
	}
	f, _ := FirstOrder(HighPass, 0.5, 250)
	if g := db(f.Response(0.5, 250)); math.Abs(g+3.01) > 0.05 {
		t.Errorf("first-order high-pass: %.2f dB at the cut-off", g)
	}
}

func TestDesignErrors(t *testing.T) {
	for _, c := range []struct {
		order  int
		fc, fs float64
		err    string // "" when the design is good
	}{
		{2, 10, 100, ""},
		{8, 10, 100, ""},
		{3, 10, 100, "order 3: an even order from 2 to 8"},
		{0, 10, 100, "order 0: an even order from 2 to 8"},
		{10, 10, 100, "order 10: an even order from 2 to 8"},
		{2, 60, 100, "cut-off 60 Hz: between 0 and half the sample rate (50 Hz)"},
		{2, 50, 100, "cut-off 50 Hz: between 0 and half the sample rate (50 Hz)"},
		{2, 0, 100, "cut-off 0 Hz"},
		{2, 49.9, 100, ""},
	} {
		_, err := Butterworth(LowPass, c.order, c.fc, c.fs)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("Butterworth(%d, %g, %g): %v, want %q", c.order, c.fc, c.fs, err, c.err)
		}
		if c.order != 2 {
			continue
		}
		_, err = FirstOrder(HighPass, c.fc, c.fs)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("FirstOrder(%g, %g): %v, want %q", c.fc, c.fs, err, c.err)
		}
	}
}

// TestFirstOrderResponse: -3 dB at the cut-off, and the low-pass passes
// what the high-pass stops, at both ends of the band.
func TestFirstOrderResponse(t *testing.T) {
	const fs = 250.0
	for _, tt := range []struct {
		kind      Kind
		dc, nyq   float64 // gains at 0 and fs/2
		fc, probe float64
	}{
		{LowPass, 1, 0, 5, 50},
		{HighPass, 0, 1, 0.5, 0.05},
	} {
		c, err := FirstOrder(tt.kind, tt.fc, fs)
		if err != nil {
			t.Fatal(err)
		}
		if g := db(c.Response(tt.fc, fs)); math.Abs(g+3.01) > 0.05 {
			t.Errorf("%v: %.2f dB at the cut-off, want -3.01", tt.kind, g)
		}
		if g := c.Response(0, fs); math.Abs(g-tt.dc) > 1e-9 {
			t.Errorf("%v: gain %v at 0 Hz, want %v", tt.kind, g, tt.dc)
		}
		if g := c.Response(fs/2, fs); math.Abs(g-tt.nyq) > 1e-9 {
			t.Errorf("%v: gain %v at %g Hz, want %v", tt.kind, g, fs/2, tt.nyq)
		}
		if g := db(c.Response(tt.probe, fs)); g > -9 {
			t.Errorf("%v: %.2f dB at %g Hz, a decade past the cut-off", tt.kind, g, tt.probe)
		}
	}
}

// TestSettleCascades: a settled high-pass cascade gives 0 for its steady
// input, and a settled low-pass cascade gives the input, however many
// sections they have.
func TestSettleCascades(t *testing.T) {
	for _, tt := range []struct {
		kind  Kind
		order int
		want  float64
	}{{HighPass, 2, 0}, {HighPass, 8, 0}, {LowPass, 8, 3}} {
		c, _ := Butterworth(tt.kind, tt.order, 5, 250)
		c.Settle(3)
		for i := range 3 {
			if y := c.Step(3); !(math.Abs(y-tt.want) <= 1e-9) { // NaN fails too
				t.Errorf("%v order %d settled on 3: step %d gives %v, want %v", tt.kind, tt.order, i, y, tt.want)
			}
		}
	}
}

func BenchmarkCascadeStep(b *testing.B) {
	c, _ := Butterworth(LowPass, 4, 40, 512)
	x := 0.0
	b.ReportAllocs()
	for b.Loop() {
		x = c.Step(x + 1)
	}
}
