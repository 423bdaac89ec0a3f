package sensor

import (
	"fmt"
	"math"
	"testing"
	"time"

	"senseboard/noise"
	"senseboard/world"
)

// TestFillECGSameSignal checks FillECG, which computes a batch in chunks,
// its sines as rotations and its waves as products from sample to
// sample, against fillECGOneByOne, which computes one sample after the
// other, each sine and wave by itself: every sample must lie within
// 1e-12 mV of it (the ECG's unit is 3.8e-4 mV), at rates and batch
// lengths that cross chunk boundaries (and one of 10 s, whose beats
// overflow the batch's buffer on the stack), for a walking wearer with
// ectopic beats, atrial fibrillation, added noise, a contact loss and the
// gear off and on.
func TestFillECGSameSignal(t *testing.T) {
	sc, err := world.ParseScenario([]byte(`segments:
  - walk: 20s
  - run: 1h
heart:
  pvc: 10
  pac: 6
  episodes:
    - at: 25s
      afib: 20s
ecgNoise:
  baselineWander: 6
  muscle: 12
  electrodeMotion: 3
events:
  - at: 14s
    contactLoss: 1500ms
  - at: 30s
    gear: off
  - at: 31s
    gear: on
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ rate, batch int }{{125, 16}, {256, 64}, {512, 16}, {200, 37}, {128, 1}, {250, 100}, {125, 1250}} {
		t.Run(fmt.Sprintf("%dHz/%d", tt.rate, tt.batch), func(t *testing.T) {
			t.Parallel()
			chunked, oneByOne := NewModel(world.New(3, sc, 0), 3), NewModel(world.New(3, sc, 0), 3)
			dt := time.Second / time.Duration(tt.rate)
			got, want := make([]float64, tt.batch), make([]float64, tt.batch)
			for k := int64(0); k*int64(tt.batch) < int64(50*tt.rate); k++ {
				t0 := time.Duration(k*int64(tt.batch)) * dt
				chunked.FillECG(got, t0, dt)
				oneByOne.fillECGOneByOne(want, t0, dt)
				for i := range got {
					if math.Abs(got[i]-want[i]) > 1e-12 || math.IsNaN(got[i]) {
						t.Fatalf("sample %d of the batch at %v: %v, one by one %v", i, t0, got[i], want[i])
					}
				}
			}
		})
	}
}

// fillECGOneByOne is FillECG as it was before it computed in chunks: one
// sample after the other, each through all its terms.
func (m *Model) fillECGOneByOne(dst []float64, t0, dt time.Duration) {
	if len(dst) == 0 {
		return
	}
	t1 := t0 + time.Duration(len(dst)-1)*dt
	beats := m.drawBeats(t0, t1, nil, nil)
	// the wearer's slow state, at both ends of the batch; contact is looked
	// at per sample only when it changes within the batch
	in0, step0, resp0 := m.w.Phases(t0)
	in1, step1, resp1 := m.w.Phases(t1)
	c0, steady := m.w.ContactSteady(t0, t1)
	span := float64(t1 - t0)
	first := 0
	heart := !m.w.Scenario().Heart.Healthy()
	for i := range dst {
		t := t0 + time.Duration(i)*dt
		nz := noise.Normal(noise.NewStream(m.seed, streamECG).Key(uint64(t)))
		contact := c0
		if !steady {
			contact = m.w.Contact(t)
		}
		if !contact {
			dst[i] = 0.003 * nz
			continue
		}
		f := 0.0
		if span > 0 {
			f = float64(t-t0) / span
		}
		st := world.State{
			Intensity: in0 + (in1-in0)*f,
			StepPhase: step0 + (step1-step0)*f,
			RespPhase: resp0 + (resp1-resp0)*f,
		}
		for first < len(beats)-1 && beats[first+1].at < t-800*time.Millisecond {
			first++
		}
		respSin := math.Sin(2 * math.Pi * st.RespPhase)
		resp := 1 + 0.05*respSin
		v := 0.0
		for k := first; k < len(beats); k++ {
			b := &beats[k]
			d := (t - b.at).Seconds()
			if d < -0.5 {
				break
			}
			if d > 0.8 {
				continue
			}
			for j := range b.n {
				wv := &b.waves[j]
				if d < wv.lo || d > wv.hi {
					continue
				}
				amp := wv.amp
				if wv.r {
					amp *= resp
				}
				x := (d - wv.at) / wv.width
				if x > -5 && x < 5 {
					v += amp * math.Exp(-0.5*x*x)
				}
			}
		}
		ts := t.Seconds()
		wander := 0.08*respSin + 0.04*math.Sin(2*math.Pi*0.05*ts+float64(m.seed%7))
		motion := 0.0
		if st.Intensity != 0 {
			motion = 0.12 * st.Intensity * (math.Sin(2*math.Pi*st.StepPhase) + 0.4*math.Sin(4*math.Pi*st.StepPhase+1))
		}
		emg := (ecgEMG + 0.012*st.Intensity) * nz
		hum := 0.008 * math.Sin(2*math.Pi*50*ts)
		if heart && m.w.RhythmAt(t) == world.AtrialFibrillation {
			v += afWave(ts)
		}
		if m.noise.on() {
			v += m.noise.at(m.seed, t, ts)
		}
		dst[i] = v + wander + motion + emg + hum
	}
}

// A motion batch gives the samples each sample alone gives, whether it
// fits the model's buffer on the stack or not.
func TestFillIMUWhateverTheBatch(t *testing.T) {
	sc, err := world.ParseScenario([]byte("segments:\n  - walk: 1h\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := NewModel(world.New(5, sc, 0), 5)
	r := Ranges{Acc: 8, Gyro: 2000}
	const dt = time.Second / 104
	for _, n := range []int{1, motionBuf, motionBuf + 1, 40} {
		acc, gyro, magn := make([]XYZ, n), make([]XYZ, n), make([]XYZ, n)
		t0 := 3 * time.Second
		m.FillIMU(acc, gyro, magn, t0, dt, r)
		for i := range n {
			a, g, b := make([]XYZ, 1), make([]XYZ, 1), make([]XYZ, 1)
			m.FillIMU(a, g, b, t0+time.Duration(i)*dt, dt, r)
			if acc[i] != a[0] || gyro[i] != g[0] || magn[i] != b[0] {
				t.Fatalf("batch of %d, sample %d: %v %v %v; alone %v %v %v", n, i, acc[i], gyro[i], magn[i], a[0], g[0], b[0])
			}
		}
	}
}
