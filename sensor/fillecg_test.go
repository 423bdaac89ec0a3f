package sensor

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

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
	beats := m.drawBeats(t0, t1, nil)
	// the wearer's slow state, at both ends of the batch; contact is looked
	// at per sample only when it changes within the batch
	sp := m.w.Span(t0, t1)
	in0, step0, resp0 := sp.Intensity[0], sp.StepPhase[0], sp.RespPhase[0]
	in1, step1, resp1 := sp.Intensity[1], sp.StepPhase[1], sp.RespPhase[1]
	c0, steady := sp.Contact, sp.Steady
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

// The ECG of a model whose beats the ECG stream's and the heart rate's
// batches share, interleaved as a device's clock runs them, with events
// injected after the streams pass them, is the ECG a model of its own
// gives each batch: what the model holds of the wearer's beats changes
// no sample. Slow and irregular rhythms, a batch longer than the beats
// the model holds and a batch far back in time take the other ways to
// the wearer's beats.
func TestFillECGSharedBeats(t *testing.T) {
	sc, err := world.ParseScenario([]byte(`segments:
  - rest: 1h
heart:
  pvc: 12
  pac: 6
  episodes:
    - at: 6s
      bradycardia: 15s
      heartRate: 32
    - at: 30s
      afib: 10s
`))
	if err != nil {
		t.Fatal(err)
	}
	events := []world.Event{
		{At: 12 * time.Second, Kind: world.SetActivity, Activity: world.Run},
		{At: 26 * time.Second, Kind: world.SetActivity, Activity: world.Rest, HeartRate: 50},
		{At: 44 * time.Second, Kind: world.ContactLoss, Duration: 2 * time.Second},
	}
	shared := NewModel(world.New(7, sc, 0), 7)
	type batch struct {
		t0, dt time.Duration
		n      int
	}
	const ecgDT, hrDT = time.Second / 125, time.Second / 256
	var batches []batch
	var ke, kh int64
	for time.Duration(kh)*hrDT < 50*time.Second {
		if te, th := time.Duration(ke+15)*ecgDT, time.Duration(kh+63)*hrDT; te <= th {
			batches = append(batches, batch{time.Duration(ke) * ecgDT, ecgDT, 16})
			ke += 16
		} else {
			batches = append(batches, batch{time.Duration(kh) * hrDT, hrDT, 64})
			kh += 64
		}
		if kh == 64*160 { // at 40 s: 10 s at once (more beats than the model holds), and a batch from the start
			batches = append(batches, batch{28 * time.Second, ecgDT, 1250}, batch{0, hrDT, 64})
		}
	}
	injected := 0
	for _, b := range batches {
		t1 := b.t0 + time.Duration(b.n-1)*b.dt
		for injected < len(events) && events[injected].At <= t1-1500*time.Millisecond { // the beats after it are held
			shared.Wearer().Inject(events[injected])
			injected++
		}
		alone := NewModel(world.New(7, sc, 0), 7)
		for _, e := range events[:injected] {
			alone.Wearer().Inject(e)
		}
		got, want := make([]float64, b.n), make([]float64, b.n)
		shared.FillECG(got, b.t0, b.dt)
		alone.FillECG(want, b.t0, b.dt)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("sample %d of the batch of %d at %v: %v; a model of its own gives %v", i, b.n, b.t0, got[i], want[i])
			}
		}
	}
}

// The beats a batch draws are the same whether the model holds them or
// takes them from the wearer, as it does for a batch that reaches more
// beats than it holds.
func TestDrawBeatsHeldOrNot(t *testing.T) {
	sc, err := world.ParseScenario([]byte(`segments:
  - rest: 10s
  - run: 1h
heart:
  pvc: 20
  pac: 10
  episodes:
    - at: 15s
      afib: 20s
`))
	if err != nil {
		t.Fatal(err)
	}
	m := NewModel(world.New(9, sc, 0), 9)
	const dt = time.Second / 256
	held, long := 0, 0
	for k := range 60 * 4 {
		t0 := time.Duration(64*k) * dt
		t1 := t0 + 63*dt // the heart rate's batch
		if k%16 == 15 {
			t1 = t0 + 6*time.Second // longer than the model holds beats for, running
		}
		from, to := t0-reachAfter, t1+reachBefore
		got, ok := m.beats.draw(m.w, from, to, nil)
		if !ok {
			long++
			continue
		}
		held++
		want := drawWearerBeats(m.w, from, to, nil)
		if len(got) == 0 || !slices.Equal(got, want) {
			t.Fatalf("beats from %v to %v: %d held, %d from the wearer", t0, t1, len(got), len(want))
		}
	}
	if held < 220 || long == 0 {
		t.Errorf("of 240 batches, %d drew beats the model held and %d beats it did not hold; want at least 220, and some not held", held, long)
	}
}

// What every stream's batch reads of a model first lies in its first two
// cache lines of 64 bytes, and the beats' bookkeeping in the next two:
// a fleet's models meet their batches cold.
func TestModelReadsFewCacheLines(t *testing.T) {
	var m Model
	c := &m.beats
	for _, f := range []struct {
		name         string
		off, size, n uintptr // n: the bytes within which the field ends
	}{
		{"w", unsafe.Offsetof(m.w), unsafe.Sizeof(m.w), 128},
		{"seed", unsafe.Offsetof(m.seed), unsafe.Sizeof(m.seed), 128},
		{"accN", unsafe.Offsetof(m.accN), unsafe.Sizeof(m.accN), 128},
		{"gyroN", unsafe.Offsetof(m.gyroN), unsafe.Sizeof(m.gyroN), 128},
		{"ecgN", unsafe.Offsetof(m.ecgN), unsafe.Sizeof(m.ecgN), 128},
		{"heart", unsafe.Offsetof(m.heart), unsafe.Sizeof(m.heart), 128},
		{"noisy", unsafe.Offsetof(m.noisy), unsafe.Sizeof(m.noisy), 128},
		{"accBias", unsafe.Offsetof(m.accBias), unsafe.Sizeof(m.accBias), 128},
		{"gyroBias", unsafe.Offsetof(m.gyroBias), unsafe.Sizeof(m.gyroBias), 128},
		{"beats.mu", unsafe.Offsetof(m.beats) + unsafe.Offsetof(c.mu), unsafe.Sizeof(c.mu), 256},
		{"beats.gen", unsafe.Offsetof(m.beats) + unsafe.Offsetof(c.gen), unsafe.Sizeof(c.gen), 256},
		{"beats.from", unsafe.Offsetof(m.beats) + unsafe.Offsetof(c.from), unsafe.Sizeof(c.from), 256},
		{"beats.n", unsafe.Offsetof(m.beats) + unsafe.Offsetof(c.n), unsafe.Sizeof(c.n), 256},
		{"beats.started", unsafe.Offsetof(m.beats) + unsafe.Offsetof(c.started), unsafe.Sizeof(c.started), 256},
		{"beats.next", unsafe.Offsetof(m.beats) + unsafe.Offsetof(c.next), unsafe.Sizeof(c.next), 256},
	} {
		if end := f.off + f.size; end > f.n {
			t.Errorf("Model.%s ends at byte %d; want at most %d", f.name, end, f.n)
		}
	}
}

// The ECG stream's and the heart rate's batches, run at once on their own
// goroutines as a device's clock may run them, share the model's beats
// and get the ECG each stream gets from a model of its own (and, under
// the race detector, touch nothing unguarded).
func TestFillECGStreamsAtOnce(t *testing.T) {
	shared := NewModel(world.New(11, nil, 0), 11)
	streams := []struct {
		rate, batch int
		got         []float64
	}{{125, 16, nil}, {256, 64, nil}}
	const secs = 16 // whole batches of both
	var wg sync.WaitGroup
	for k := range streams {
		s := &streams[k]
		s.got = make([]float64, secs*s.rate)
		wg.Add(1)
		go func() {
			defer wg.Done()
			dt := time.Second / time.Duration(s.rate)
			for i := 0; i < len(s.got); i += s.batch {
				shared.FillECG(s.got[i:i+s.batch], time.Duration(i)*dt, dt)
			}
		}()
	}
	wg.Wait()
	for _, s := range streams {
		alone := NewModel(world.New(11, nil, 0), 11)
		want := make([]float64, len(s.got))
		dt := time.Second / time.Duration(s.rate)
		for i := 0; i < len(want); i += s.batch {
			alone.FillECG(want[i:i+s.batch], time.Duration(i)*dt, dt)
		}
		for i := range want {
			if s.got[i] != want[i] {
				t.Fatalf("%d Hz, sample %d: %v; a model of its own gives %v", s.rate, i, s.got[i], want[i])
			}
		}
	}
}
