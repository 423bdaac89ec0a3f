// Package signal owns the device's signal processing, as pure streaming
// functions: digital filters designed here (gonum has no IIR design), the
// QRS detector that heart rate comes from (and its two-lead form, for
// recordings of two leads), and the detectors that turn accelerometer
// samples into movement, tap, double-tap and free-fall states.
package signal

import (
	"fmt"
	"math"
)

// Biquad is a second-order IIR section in transposed direct form II.
type Biquad struct {
	B0, B1, B2, A1, A2 float64
	z1, z2             float64
}

// Step filters one sample.
func (f *Biquad) Step(x float64) float64 {
	y := f.B0*x + f.z1
	f.z1 = f.B1*x - f.A1*y + f.z2
	f.z2 = f.B2*x - f.A2*y
	return y
}

// Reset clears the filter's state.
func (f *Biquad) Reset() { f.z1, f.z2 = 0, 0 }

// Settle sets the state to the steady state for a constant input x, so a
// filter started on a signal with an offset does not ring.
func (f *Biquad) Settle(x float64) {
	// steady state: y = g x with g the DC gain
	g := (f.B0 + f.B1 + f.B2) / (1 + f.A1 + f.A2)
	y := g * x
	f.z2 = f.B2*x - f.A2*y
	f.z1 = f.B1*x - f.A1*y + f.z2
}

// Response returns the filter's gain at frequency f for sample rate fs.
func (f *Biquad) Response(freq, fs float64) float64 {
	w := 2 * math.Pi * freq / fs
	// H(z) = (b0 + b1 z^-1 + b2 z^-2) / (1 + a1 z^-1 + a2 z^-2), z = e^{jw}
	c1, s1 := math.Cos(w), -math.Sin(w)
	c2, s2 := math.Cos(2*w), -math.Sin(2*w)
	nr, ni := f.B0+f.B1*c1+f.B2*c2, f.B1*s1+f.B2*s2
	dr, di := 1+f.A1*c1+f.A2*c2, f.A1*s1+f.A2*s2
	return math.Hypot(nr, ni) / math.Hypot(dr, di)
}

// Kind is a filter's kind.
type Kind uint8

// The filter kinds.
const (
	LowPass Kind = iota
	HighPass
)

// Butterworth designs a Butterworth filter of an even order (2, 4, 6, 8)
// with its -3 dB point at fc for sample rate fs, as a cascade of biquads, by
// the bilinear transform with pre-warping.
func Butterworth(kind Kind, order int, fc, fs float64) (Cascade, error) {
	if order < 2 || order > 8 || order%2 != 0 {
		return nil, fmt.Errorf("Butterworth order %d: an even order from 2 to 8", order)
	}
	if !(fc > 0 && fc < fs/2) {
		return nil, fmt.Errorf("cut-off %g Hz: between 0 and half the sample rate (%g Hz)", fc, fs/2)
	}
	k := math.Tan(math.Pi * fc / fs)
	var c Cascade
	for i := 0; i < order/2; i++ {
		// pole pair i of the analogue prototype
		q := 1 / (2 * math.Cos(math.Pi*float64(2*i+1)/float64(2*order)))
		n := 1 / (1 + k/q + k*k)
		f := Biquad{A1: 2 * (k*k - 1) * n, A2: (1 - k/q + k*k) * n}
		if kind == LowPass {
			f.B0 = k * k * n
			f.B1, f.B2 = 2*f.B0, f.B0
		} else {
			f.B0 = n
			f.B1, f.B2 = -2*n, n
		}
		c = append(c, f)
	}
	return c, nil
}

// FirstOrder designs a first-order low- or high-pass filter by the bilinear
// transform (a biquad whose second-order terms are zero).
func FirstOrder(kind Kind, fc, fs float64) (Cascade, error) {
	if !(fc > 0 && fc < fs/2) {
		return nil, fmt.Errorf("cut-off %g Hz: between 0 and half the sample rate (%g Hz)", fc, fs/2)
	}
	k := math.Tan(math.Pi * fc / fs)
	n := 1 / (1 + k)
	f := Biquad{A1: (k - 1) * n}
	if kind == LowPass {
		f.B0, f.B1 = k*n, k*n
	} else {
		f.B0, f.B1 = n, -n
	}
	return Cascade{f}, nil
}

// Cascade is biquads in series.
type Cascade []Biquad

// Step filters one sample through every section.
func (c Cascade) Step(x float64) float64 {
	for i := range c {
		x = c[i].Step(x)
	}
	return x
}

// Reset clears every section's state.
func (c Cascade) Reset() {
	for i := range c {
		c[i].Reset()
	}
}

// Settle sets every section to its steady state for a constant input x.
func (c Cascade) Settle(x float64) {
	for i := range c {
		c[i].Settle(x)
		x *= (c[i].B0 + c[i].B1 + c[i].B2) / (1 + c[i].A1 + c[i].A2)
	}
}

// Response returns the cascade's gain at frequency f for sample rate fs.
func (c Cascade) Response(freq, fs float64) float64 {
	g := 1.0
	for i := range c {
		g *= c[i].Response(freq, fs)
	}
	return g
}
