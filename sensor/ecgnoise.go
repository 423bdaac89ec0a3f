package sensor

import (
	"math"
	"time"

	"senseboard/noise"
	"senseboard/world"
)

// noise streams of the added ECG noise
const (
	streamBW uint64 = iota + 200
	streamMA
	streamEM
)

// qrsPeakToPeak is the peak-to-peak amplitude of the model's sinus QRS
// complex, mV: the signal of the noise stress test's SNR.
var qrsPeakToPeak = func() float64 {
	lo, hi := 0.0, 0.0
	for t := -0.1; t <= 0.1; t += 0.0005 {
		v := 0.0
		for _, wv := range waves[1:4] {
			x := (t - wv.at) / wv.width
			v += wv.amp * math.Exp(-0.5*x*x)
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return hi - lo
}()

// bwTones are the baseline wander's components: frequencies (Hz) and
// amplitudes relative to each other, falling with frequency.
var bwTones = [...]struct{ f, a float64 }{{0.07, 1}, {0.13, 0.8}, {0.21, 0.6}, {0.33, 0.45}, {0.52, 0.3}, {0.8, 0.2}}

// emSlot is the electrode motion artefact's time slot: each may hold one
// artefact, with probability emChance.
const (
	emSlot   = 0.5 // s
	emChance = 0.4
	emMinW   = 0.03 // s, the narrowest artefact
	emMaxW   = 0.15 // s, the widest
)

// ecgNoise is the added noise of a model: each kind's gain (mV per unit of
// its unit-power process), 0 for none.
type ecgNoise struct {
	bw, ma, em float64
	bwPhase    [len(bwTones)]float64
	maN        noise.Stream // the muscle noise's, per sample
}

// newECGNoise sets the gains for the SNRs of n. The noise power for an SNR
// of s dB is S / 10^(s/10), with S = (QRS peak-to-peak)^2 / 8.
func newECGNoise(n world.ECGNoise, seed uint64) ecgNoise {
	var e ecgNoise
	s := qrsPeakToPeak * qrsPeakToPeak / 8
	gain := func(snr *float64) float64 {
		if snr == nil {
			return 0
		}
		return math.Sqrt(s / math.Pow(10, *snr/10))
	}
	e.bw, e.ma, e.em = gain(n.BaselineWander), gain(n.Muscle), gain(n.ElectrodeMotion)
	e.maN = noise.NewStream(seed, streamMA)
	for i := range e.bwPhase {
		e.bwPhase[i] = 2 * math.Pi * noise.Uniform(noise.Key(seed, streamBW, uint64(i)))
	}
	return e
}

// bwPower is the mean square of the unnormalised baseline wander.
var bwPower = func() float64 {
	p := 0.0
	for _, c := range bwTones {
		p += c.a * c.a / 2
	}
	return p
}()

// emPower is the mean square of the unnormalised motion artefact: an
// artefact x e^(-x^2/2) of width w and amplitude a (a standard normal)
// has energy a^2 w sqrt(pi)/2, and they come emChance per slot.
var emPower = emChance / emSlot * (emMinW + emMaxW) / 2 * math.Sqrt(math.Pi) / 2

// the root mean squares that scale each process to unit power
var bwRMS, emRMS = math.Sqrt(bwPower), math.Sqrt(emPower)

// on reports whether any noise is added.
func (e *ecgNoise) on() bool { return e.bw != 0 || e.ma != 0 || e.em != 0 }

// at returns the added noise at t (ts = t in seconds), mV.
func (e *ecgNoise) at(seed uint64, t time.Duration, ts float64) float64 {
	v := 0.0
	if e.bw != 0 {
		s := 0.0
		for i, c := range bwTones {
			s += c.a * math.Sin(2*math.Pi*c.f*ts+e.bwPhase[i])
		}
		v += e.bw * s / bwRMS
	}
	if e.ma != 0 {
		v += e.ma * noise.Normal(e.maN.Key(uint64(t)))
	}
	if e.em != 0 {
		s := 0.0
		slot := int64(math.Floor(ts / emSlot))
		for k := slot - 2; k <= slot+2; k++ {
			key := noise.Key(seed, streamEM, uint64(k))
			if noise.Uniform(key) >= emChance {
				continue
			}
			c := (float64(k) + noise.Uniform(key+1)) * emSlot
			w := emMinW + (emMaxW-emMinW)*noise.Uniform(key+2)
			x := (ts - c) / w
			if x > -6 && x < 6 {
				s += noise.Gauss(key+3) * x * math.Exp(-0.5*x*x)
			}
		}
		v += e.em * s / emRMS
	}
	return v
}
