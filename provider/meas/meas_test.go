package meas_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"senseboard/content"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"senseboard"
	"senseboard/provider/debug"
	"senseboard/provider/meas"
	"senseboard/provider/system"
	"senseboard/replay"
	"senseboard/resource"
	sbt "senseboard/senseboardtest"
	"senseboard/sensor"
	"senseboard/signal"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func motion(s *sbt.Sub) []*content.MotionData {
	var out []*content.MotionData
	for _, c := range s.Contents() {
		out = append(out, c.(*content.MotionData))
	}
	return out
}

// TestExactSampleTiming checks, at every rate, that an hour of subscription
// delivers rate x 3600 samples, in notifications of the documented batch
// size, whose timestamps are exactly those of their first samples. The
// device's oscillator is perfect here (clockDrift: off); the drift has its
// own test in package timesvc.
func TestExactSampleTiming(t *testing.T) {
	span := time.Hour
	if testing.Short() {
		span = 10 * time.Minute
	}
	check := func(t *testing.T, rate, batch int, stamps []uint32, counts []int, start time.Duration) {
		t.Helper()
		total := 0
		for i, n := range counts {
			if n != batch {
				t.Fatalf("notification %d holds %d samples, want %d", i, n, batch)
			}
			first := int64(total)
			want := uint32((start + time.Duration(first*int64(time.Second)/int64(rate))) / time.Millisecond)
			if stamps[i] != want {
				t.Fatalf("notification %d: Timestamp %d, want %d (sample %d at %d Hz)", i, stamps[i], want, first, rate)
			}
			total += n
		}
		// the samples taken, rate x duration rounded down, of which the
		// whole batches have been delivered (over an hour, all of them)
		taken := int(float64(rate) * span.Seconds())
		if want := taken / batch * batch; total != want {
			t.Errorf("%d samples in %v at %d Hz, want %d", total, span, rate, want)
		}
	}
	for _, rate := range meas.SampleRates {
		t.Run(fmt.Sprintf("gyro %d", rate), func(t *testing.T) {
			d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, "clockDrift: off\n")})
			d.Advance(1234 * time.Millisecond) // a start between ticks
			s := d.Subscribe(fmt.Sprintf("/Meas/Gyro/%d", rate))
			var stamps []uint32
			var counts []int
			for elapsed := time.Duration(0); elapsed < span; elapsed += time.Minute {
				d.Advance(time.Minute)
				for _, m := range motion(s) {
					stamps, counts = append(stamps, m.Timestamp), append(counts, len(m.ArrayGyro))
				}
			}
			check(t, int(rate), meas.BatchSize(int(rate)), stamps, counts, 1234*time.Millisecond)
		})
	}
	for _, rate := range meas.ECGRates {
		t.Run(fmt.Sprintf("ecg %d", rate), func(t *testing.T) {
			d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, "clockDrift: off\n")})
			d.Advance(777 * time.Millisecond)
			s := d.SubscribeAll(fmt.Sprintf("/Meas/ECG/%d", rate))
			var stamps []uint32
			var counts []int
			for elapsed := time.Duration(0); elapsed < span; elapsed += 10 * time.Second {
				d.Advance(10 * time.Second)
				for _, c := range s.Contents() {
					e := c.(*content.ECGData)
					stamps, counts = append(stamps, e.Timestamp), append(counts, len(e.Samples))
				}
			}
			check(t, int(rate), content.ECGArraySize, stamps, counts, 777*time.Millisecond)
		})
	}
}

func TestBatchSizes(t *testing.T) {
	for rate, want := range map[int]int{13: 1, 26: 2, 52: 4, 104: 8, 208: 8, 1666: 8} {
		if got := meas.BatchSize(rate); got != want {
			t.Errorf("BatchSize(%d) = %d, want %d", rate, got, want)
		}
	}
}

func TestInfoConfigAndRates(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	if c := d.Expect(200, resource.Get, "/Meas/IMU/Config").Content.(*meas.IMUConfig); *c != (meas.IMUConfig{AccRange: 8, GyroRange: 2000, MagnRange: 5000}) {
		t.Errorf("IMU config %+v", c)
	}
	d.Expect(400, resource.Put, "/Meas/Acc/Config", sbt.Record(t, "AccConfig", `{"GRange": 3}`))
	d.Expect(400, resource.Put, "/Meas/Gyro/Config", sbt.Record(t, "GyroConfig", `{"DPSRange": 250}`))
	d.Expect(200, resource.Put, "/Meas/Gyro/Config", sbt.Record(t, "GyroConfig", `{"DPSRange": 245}`))
	d.Expect(200, resource.Put, "/Meas/Magn/Config", sbt.Record(t, "MagnConfig", `{"Scale": 5000}`))
	d.Expect(400, resource.Put, "/Meas/Magn/Config", sbt.Record(t, "MagnConfig", `{"Scale": 100}`))
	for _, p := range []string{"/Meas/Acc/100", "/Meas/Gyro/0", "/Meas/Magn/2000", "/Meas/IMU9/1000", "/Meas/ECG/300", "/Meas/ECG/100/mV"} {
		s := d.Subscribe(p)
		if s.Env.Status != 501 || !strings.Contains(s.Env.Error, "allowed:") {
			t.Errorf("SUBSCRIBE %s: %d %s", p, s.Env.Status, s.Env.Error)
		}
	}
	d.Device.Reset()
	if c := d.Expect(200, resource.Get, "/Meas/Gyro/Config").Content.(*meas.GyroConfig); c.DPSRange != 2000 {
		t.Errorf("gyro range after reset %d", c.DPSRange)
	}
}

func TestIMUStreamsAreSynchronized(t *testing.T) {
	d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, "segments:\n  - walk: 1h\n")})
	d.Advance(30 * time.Second)
	acc, gyro, imu9 := d.Subscribe("/Meas/Acc/208"), d.Subscribe("/Meas/Gyro/208"), d.Subscribe("/Meas/IMU9/208")
	d.Advance(2 * time.Second)
	a, g, n := motion(acc), motion(gyro), motion(imu9)
	if len(a) == 0 || len(a) != len(n) || len(g) != len(n) {
		t.Fatalf("%d, %d and %d notifications", len(a), len(g), len(n))
	}
	for i := range n {
		if len(n[i].ArrayAcc) != 8 || len(n[i].ArrayGyro) != 8 || len(n[i].ArrayMagn) != 8 {
			t.Fatalf("IMU9 notification %d arrays %d/%d/%d", i, len(n[i].ArrayAcc), len(n[i].ArrayGyro), len(n[i].ArrayMagn))
		}
		if n[i].Timestamp != a[i].Timestamp || fmt.Sprint(n[i].ArrayAcc) != fmt.Sprint(a[i].ArrayAcc) || fmt.Sprint(n[i].ArrayGyro) != fmt.Sprint(g[i].ArrayGyro) {
			t.Fatalf("IMU9 and the single streams differ at notification %d", i)
		}
	}
	// standing: gravity on -x; the field about 50 uT plus the device's offset
	var x, b float64
	for _, m := range n {
		for k := range m.ArrayAcc {
			x += float64(m.ArrayAcc[k].X)
			v := m.ArrayMagn[k]
			b += math.Sqrt(float64(v.X*v.X + v.Y*v.Y + v.Z*v.Z))
		}
	}
	cnt := float64(len(n) * 8)
	if x/cnt > -8.5 || x/cnt < -11 {
		t.Errorf("mean acc x %.2f while standing and walking", x/cnt)
	}
	if b/cnt < 25 || b/cnt > 80 {
		t.Errorf("mean field %.1f uT", b/cnt)
	}
}

func TestRangeChangeMidSubscription(t *testing.T) {
	d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, "events:\n  - at: 3s\n    tap: {}\n  - at: 6s\n    tap: {}\n")})
	s := d.Subscribe("/Meas/Acc/1666")
	peak := func() float64 {
		p := 0.0
		for _, m := range motion(s) {
			for _, v := range m.ArrayAcc {
				p = math.Max(p, math.Abs(float64(v.Z)))
			}
		}
		return p
	}
	d.Advance(4 * time.Second)
	if p := peak(); p < 25 {
		t.Errorf("tap peak %.1f m/s^2 at 8 g", p)
	}
	d.Expect(200, resource.Put, "/Meas/Acc/Config", sbt.Record(t, "AccConfig", `{"GRange": 2}`))
	d.Advance(3 * time.Second)
	if p := peak(); p > 2*9.80665+1e-3 || p < 19 {
		t.Errorf("tap peak %.2f m/s^2 at 2 g: want clipped at 19.61", p)
	}
}

func TestECG(t *testing.T) {
	d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, "events:\n  - at: 20s\n    gear: off\n")})
	info := func() *content.ECGInfo {
		return d.Expect(200, resource.Get, "/Meas/ECG/Info").Content.(*content.ECGInfo)
	}
	cfg := func() string {
		c := d.Expect(200, resource.Get, "/Meas/ECG/Config").Content.(*content.ECGConfig)
		f := func(p *float32) string {
			if p == nil {
				return "null"
			}
			return fmt.Sprint(*p)
		}
		return f(c.LowPass) + "/" + f(c.HighPass)
	}
	if i := info(); i.CurrentSampleRate != 0 || i.ArraySize != 16 || len(i.AvailableSampleRates) != 7 {
		t.Errorf("info %+v", i)
	}
	if c := cfg(); c != "40/0.5" {
		t.Errorf("config when not measuring %s", c)
	}
	ints := d.Subscribe("/Meas/ECG/256")
	mv := d.Subscribe("/meas/ecg/256/MV")
	if ints.Env.Status != 200 || mv.Env.Status != 200 || mv.Env.URI != "/net/000123/Meas/ECG/256/mV" {
		t.Fatalf("subscriptions %+v %+v", ints.Env, mv.Env)
	}
	if i := info(); i.CurrentSampleRate != 256 {
		t.Errorf("current rate %d", i.CurrentSampleRate)
	}
	if c := cfg(); c != "100/0.5" {
		t.Errorf("default config at 256 Hz %s", c)
	}
	if other := d.Subscribe("/Meas/ECG/512"); other.Env.Status != 409 || !strings.Contains(other.Env.Error, "runs at 256 Hz") {
		t.Errorf("second rate: %d %s", other.Env.Status, other.Env.Error)
	}
	if same := d.Subscribe("/Meas/ECG/256"); same.Env.Status != 200 {
		t.Errorf("same rate again: %d", same.Env.Status)
	}
	// the integer and mV streams carry the same samples; R waves around 1 mV
	var peak float64
	for range 8 {
		d.Advance(100 * time.Millisecond)
		a, b := ints.Contents(), mv.Contents()
		if len(a) != len(b) {
			t.Fatalf("%d integer and %d mV notifications", len(a), len(b))
		}
		for k := range a {
			ia, mb := a[k].(*content.ECGData), b[k].(*content.ECGDataMV)
			for j := range ia.Samples {
				if want := float32(float64(ia.Samples[j]) * sensor.ECGUnit); mb.Samples[j] != want {
					t.Fatalf("sample %d: %d units and %v mV", j, ia.Samples[j], mb.Samples[j])
				}
				peak = math.Max(peak, float64(mb.Samples[j]))
			}
		}
	}
	if peak < 0.6 || peak > 2 {
		t.Errorf("ECG peak %.2f mV over 800 ms", peak)
	}
	// filters: null bypasses, keys fold, only offered cut-offs
	d.Expect(200, resource.Put, "/Meas/ECG/Config", sbt.Record(t, "ECGConfig", `{"low-pass": 150, "HIGH_PASS": null}`))
	if c := cfg(); c != "150/null" {
		t.Errorf("after PUT %s", c)
	}
	d.Expect(200, resource.Put, "/Meas/ECG/Config", sbt.Record(t, "ECGConfig", `{"LowPass": null}`))
	if c := cfg(); c != "null/null" {
		t.Errorf("a key left out keeps its setting: %s", c)
	}
	d.Expect(400, resource.Put, "/Meas/ECG/Config", sbt.Record(t, "ECGConfig", `{"LowPass": 60}`))
	// gear off: a flat, noisy signal
	d.Advance(25 * time.Second)
	ints.Contents()
	d.Advance(62500 * time.Microsecond)
	for _, c := range ints.Contents() {
		for _, v := range c.(*content.ECGData).Samples {
			if math.Abs(float64(v)*sensor.ECGUnit) > 0.05 {
				t.Fatalf("%.3f mV with the gear off", float64(v)*sensor.ECGUnit)
			}
		}
	}
	d.Device.Reset()
	if c := cfg(); c != "40/0.5" {
		t.Errorf("config after reset %s", c)
	}
}

// A subscriber that does not take its notifications loses samples as the
// front end's 32-sample buffer overflows, and a warning says so.
func TestECGFrontEndBufferLosesSamples(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	d.Expect(200, resource.Put, "/System/Debug/Config", sbt.Record(t, "DebugMessageConfig", `{"SystemMessages": true}`))
	warnings := d.Subscribe("/System/Debug/warning")
	slow := d.Subscribe("/Meas/ECG/512")
	d.Advance(time.Second)
	ev := slow.Events()
	if len(ev) != meas.FrontEndFIFO/content.ECGArraySize {
		t.Errorf("%d notifications kept for a client that did not read, want %d", len(ev), meas.FrontEndFIFO/content.ECGArraySize)
	}
	if sub := ev[0].Sub; sub.Dropped() < 25 {
		t.Errorf("%d notifications dropped in a second at 512 Hz", sub.Dropped())
	}
	d.Advance(debug.DrainInterval)
	found := false
	for _, c := range warnings.Contents() {
		found = found || strings.Contains(c.(*debug.Message).Message, "32-sample buffer overflowed")
	}
	if !found {
		t.Error("no warning about lost samples")
	}
}

func TestHeartRate(t *testing.T) {
	d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, "start:\n  heartRate: 75\nevents:\n  - at: 40s\n    gear: off\n")})
	if i := d.Expect(200, resource.Get, "/Meas/HR/Info").Content.(*content.HRInfo); *i != (content.HRInfo{Min: 200, Max: 2000, Accuracy: 5}) {
		t.Errorf("info %+v", i)
	}
	hr := d.Subscribe("/Meas/HR")
	if hr.Env.Status != 204 {
		t.Errorf("first subscription answers %d, want 204 while starting", hr.Env.Status)
	}
	d.Advance(30 * time.Second)
	if again := d.Subscribe("/Meas/HR"); again.Env.Status != 200 {
		t.Errorf("subscription once running answers %d", again.Env.Status)
	}
	got := hr.Contents()
	if len(got) < 25 || len(got) > 45 {
		t.Fatalf("%d heart-rate updates in 30 s at 75 bpm", len(got))
	}
	last := got[len(got)-1].(*content.HRData)
	if last.Average < 65 || last.Average > 85 || len(last.RRData) != 1 || last.RRData[0] < 650 || last.RRData[0] > 950 {
		t.Errorf("last update %+v", last)
	}
	d.Advance(10 * time.Second)
	hr.Contents()
	d.Advance(20 * time.Second) // gear off from 40 s: no heart rate
	if got := hr.Contents(); len(got) > 1 {
		t.Errorf("%d heart-rate updates with the gear off", len(got))
	}
	if rr := d.Device.HR.LastRR(); rr < 600*time.Millisecond || rr > time.Second {
		t.Errorf("front end's RTOR %v", rr)
	}
}

func TestTemperature(t *testing.T) {
	d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, "events:\n  - at: 10s\n    gear: off\n")})
	if i := d.Expect(200, resource.Get, "/Meas/Temp/Info").Content.(*content.TempInfo); *i != (content.TempInfo{Min: 233, Max: 398, Accuracy: 1}) {
		t.Errorf("info %+v", i)
	}
	v := d.Expect(200, resource.Get, "/Meas/Temp").Content.(*content.TempData)
	if v.Measurement < 305 || v.Measurement > 308 {
		t.Errorf("skin temperature %.2f K", v.Measurement)
	}
	s := d.Subscribe("/Meas/Temp")
	d.Advance(10 * time.Minute)
	got := s.Contents()
	if len(got) < 10 || len(got) > 600 {
		t.Fatalf("%d notifications in 10 minutes", len(got))
	}
	prev := float32(0)
	for i, c := range got {
		m := c.(*content.TempData)
		if m.Measurement == prev {
			t.Fatalf("notification %d repeats %.4f: notifications come on change", i, prev)
		}
		if i > 0 && m.Timestamp-got[i-1].(*content.TempData).Timestamp < 1000 {
			t.Fatalf("notifications %d ms apart", m.Timestamp-got[i-1].(*content.TempData).Timestamp)
		}
		prev = m.Measurement
	}
	if last := got[len(got)-1].(*content.TempData).Measurement; last > v.Measurement-2 {
		t.Errorf("with the gear off for 10 minutes the reading is %.2f K, from %.2f", last, v.Measurement)
	}
}

// stateEvents collects the notifications of one state.
func stateEvents(s *sbt.Sub) []system.StateChange {
	var out []system.StateChange
	for _, c := range s.Contents() {
		out = append(out, *c.(*system.StateChange))
	}
	return out
}

func TestDetectedStates(t *testing.T) {
	d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, `segments:
  - rest: 30s
  - walk: 30s
  - rest: 2m
events:
  - at: 10s
    tap: {}
  - at: 15s
    doubleTap: {}
  - at: 100s
    freeFall: 400ms
`)})
	d.Subscribe("/Meas/Acc/13") // the detectors need the accelerometer, at any rate
	move, dbl, tap, fall := d.Subscribe("/System/States/0"), d.Subscribe("/System/States/3"), d.Subscribe("/System/States/4"), d.Subscribe("/System/States/5")
	d.Advance(3 * time.Minute)
	ms := func(e []system.StateChange) string {
		var s []string
		for _, c := range e {
			s = append(s, fmt.Sprintf("%d@%d", c.NewState, c.Timestamp))
		}
		return strings.Join(s, " ")
	}
	taps := stateEvents(tap)
	if len(taps) != 3 || taps[0].Timestamp < 10000 || taps[0].Timestamp > 10200 || taps[1].Timestamp < 15000 || taps[2].Timestamp > 15500 {
		t.Errorf("taps %s: want one at 10 s and two at 15 s", ms(taps))
	}
	if dt := stateEvents(dbl); len(dt) != 2 || dt[0].NewState != 1 || dt[0].Timestamp < 15250 || dt[0].Timestamp > 15500 || dt[1].NewState != 0 {
		t.Errorf("double tap %s", ms(dt))
	}
	ff := stateEvents(fall)
	if len(ff) != 2 || ff[0].NewState != 1 || ff[1].NewState != 0 {
		t.Fatalf("free fall %s", ms(ff))
	}
	if late := int(ff[0].Timestamp) - 100000; late < 0 || late > 100 {
		t.Errorf("free fall detected %d ms after it started, want within 100", late)
	}
	mv := stateEvents(move)
	walking := false
	for _, c := range mv {
		walking = walking || c.NewState == 1 && c.Timestamp >= 30000 && c.Timestamp < 36000
	}
	if !walking || mv[len(mv)-1].NewState != 0 {
		t.Errorf("movement %s", ms(mv))
	}
	if v := d.Expect(200, resource.Get, "/System/States/0").Content; v != int32(0) {
		t.Errorf("movement at rest %v", v)
	}
}

// TestNoFalseTapsWhileWalking walks for ten minutes: taps and double taps
// must not be detected.
func TestNoFalseTapsWhileWalking(t *testing.T) {
	span := 10 * time.Minute
	if testing.Short() {
		span = 2 * time.Minute
	}
	for _, sc := range []string{"segments:\n  - walk: 1h\n", "segments:\n  - run: 1h\n"} {
		d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, sc)})
		d.Subscribe("/Meas/Acc/52")
		dbl, tap := d.Subscribe("/System/States/3"), d.Subscribe("/System/States/4")
		d.Advance(span)
		if n, m := len(stateEvents(tap)), len(stateEvents(dbl)); n > 0 || m > 0 {
			t.Errorf("%q: %d taps and %d double taps detected", sc, n, m)
		}
		if v := d.Expect(200, resource.Get, "/System/States/0").Content; v != int32(1) {
			t.Errorf("%q: movement %v", sc, v)
		}
	}
}

// The same seed and scenario give the same bytes.
func TestDeterministicBySeed(t *testing.T) {
	run := func(seed int64) string {
		d := sbt.New(t, senseboard.Config{Seed: seed, Scenario: sbt.Scenario(t, "segments:\n  - walk: 1m\n")})
		a, e, h := d.Subscribe("/Meas/IMU9/104"), d.Subscribe("/Meas/ECG/128/mV"), d.Subscribe("/Meas/HR")
		d.Advance(20 * time.Second)
		var b []byte
		for _, s := range []*sbt.Sub{a, e, h} {
			for _, c := range s.Contents() {
				b, _ = resource.AppendJSON(b, c)
			}
		}
		return string(b)
	}
	one, two, other := run(5), run(5), run(6)
	if one != two {
		t.Error("the same seed gave different data")
	}
	if one == other {
		t.Error("another seed gave the same data")
	}
}

// The detectors wait while nobody subscribes to their states and catch up
// when a state is read: what a GET reads is what it reads on a device whose
// detectors ran all along, at every reading, also after gaps longer than
// the catch-up window, and a subscription that starts late sees the
// changes that follow as the running detectors report them.
func TestDetectorsRunOnDemand(t *testing.T) {
	const sc = `segments:
  - rest: 30s
  - walk: 40s
  - rest: 3m
  - run: 1m
events:
  - at: 10s
    tap: {}
  - at: 15s
    doubleTap: {}
  - at: 100s
    freeFall: 400ms
  - at: 200s
    doubleTap: {}
`
	watched, lazy := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, sc)}), sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, sc)})
	watched.Subscribe("/Meas/Acc/52")
	lazy.Subscribe("/Meas/Acc/52")
	watched.Subscribe("/System/States/0") // keeps its detectors running
	var lazyMove *sbt.Sub
	steps := []time.Duration{5 * time.Second, 7 * time.Second, 3500 * time.Millisecond, 45 * time.Second, 101 * time.Second, 700 * time.Millisecond, 1 * time.Second, 30 * time.Second, 90 * time.Second}
	for i, step := range steps {
		watched.Advance(step)
		lazy.Advance(step)
		for _, id := range []int{0, 3, 4, 5} {
			p := fmt.Sprintf("/System/States/%d", id)
			if w, l := watched.Expect(200, resource.Get, p).Content, lazy.Expect(200, resource.Get, p).Content; w != l {
				t.Errorf("step %d, at %v: %s reads %v, want %v as on a device whose detectors run", i, watched.Clock.Now(), p, l, w)
			}
		}
		if i == 5 {
			lazyMove = lazy.Subscribe("/System/States/0")
		}
	}
	if lazyMove == nil || len(stateEvents(lazyMove)) == 0 {
		t.Fatal("the late subscription saw no movement change")
	}
}

// twoLeadRecord returns a WFDB record of 60 s at 360 Hz of a beat every
// 800 ms from 1 s, its header and its signals in format 16: the first lead
// 1 mV complexes with a T wave; the second (when leads is 2) 0.6 times as
// large and 12 ms later. From 20 s to 40 s the first lead alone carries a
// burst of electrode noise (5 to 15 Hz, 0.8 mV) and, from 25 s, a spike of
// the QRS's width 450 ms after every third beat, which a detector of that
// lead takes for beats.
func twoLeadRecord(leads int) (header, dat []byte) {
	const fs, length = 360, 60
	n := fs * length
	x := [2][]float64{make([]float64, n), make([]float64, n)}
	for at := 1.0; at < length; at += 0.8 {
		for lead, b := range [2]struct{ late, amp float64 }{{0, 1}, {0.012, 0.6}} {
			for i := max(int((at-0.2)*fs), 0); i < min(int((at+0.6)*fs), n); i++ {
				t := float64(i)/fs - at - b.late
				q, tw := t/0.01, (t-0.26)/0.05
				x[lead][i] += b.amp * (math.Exp(-0.5*q*q) + 0.3*math.Exp(-0.5*tw*tw))
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	hp, _ := signal.Butterworth(signal.HighPass, 2, 5, fs)
	lp, _ := signal.Butterworth(signal.LowPass, 2, 15, fs)
	for i := 20 * fs; i < 40*fs; i++ {
		x[0][i] += 0.8 * lp.Step(hp.Step(rng.NormFloat64()))
	}
	for k, at := 0, 1.45; at < 40; k, at = k+1, at+0.8 {
		if k%3 != 0 || at < 25 {
			continue
		}
		for i := int((at - 0.1) * fs); i < int((at+0.1)*fs); i++ {
			q := (float64(i)/fs - at) / 0.012
			x[0][i] -= 1.1 * math.Exp(-0.5*q*q)
		}
	}
	var sums [2]int16 // each lead's checksum: its samples' sum in 16 bits
	for i := range n {
		for lead := range leads {
			v := int16(math.Round(1000 * x[lead][i]))
			dat = binary.LittleEndian.AppendUint16(dat, uint16(v))
			sums[lead] += v
		}
	}
	header = fmt.Appendf(nil, "tl %d %d %d\n", leads, fs, n)
	for lead := range leads {
		header = fmt.Appendf(header, "tl.dat 16 1000 16 0 0 %d 0 lead%d\n", sums[lead], lead+1)
	}
	return header, dat
}

// hrOfReplay replays a recording on a device, the heart rate on leads of
// it (Config.ReplayHRLeads), and returns the RR intervals /Meas/HR
// notifies in the first 59 s, in ms.
func hrOfReplay(t *testing.T, r *replay.Recording, leads int) []uint16 {
	t.Helper()
	d := sbt.New(t, senseboard.Config{Replay: []*replay.Recording{r}, ReplayHRLeads: leads})
	hr := d.Subscribe("/Meas/HR")
	d.Advance(59 * time.Second)
	var rr []uint16
	for _, c := range hr.Contents() {
		rr = append(rr, c.(*content.HRData).RRData...)
	}
	return rr
}

// TestHeartRateTwoLeads replays a record of two leads whose first lead has
// noise bursts that the second lacks: with the heart rate on both leads
// (ReplayHRLeads 2), /Meas/HR notifies the beats without the bursts' false
// beats, where the first lead alone gives them. By default, and on a
// record of one lead, it gives exactly the intervals of the front end and
// the single-lead detector on the first lead.
func TestHeartRateTwoLeads(t *testing.T) {
	const rate = meas.HRRate
	load := func(leads int) *replay.Recording {
		hea, dat := twoLeadRecord(leads)
		r, err := replay.WFDB("tl.hea", hea, dat, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	two, one := load(2), load(1)
	// a false beat splits an interval of the 800 ms rhythm in two (the
	// spikes 450 and 350 ms); a beat placed 16 ms off in the noise moves
	// two intervals by that
	off := func(rr []uint16) (n int) {
		for _, v := range rr {
			if v < 760 || v > 840 {
				n++
			}
		}
		return n
	}
	alone := hrOfReplay(t, one, 0)
	if n := off(alone); n < 5 {
		t.Fatalf("the first lead alone gives %d intervals off 800 ms by more than 40 ms; the test needs at least 5", n)
	}
	// 72 beats in 59 s: the last up to 2 s late (the two-lead detector's
	// wait and its own), the first two no interval
	if got := hrOfReplay(t, two, 2); off(got) > 0 || len(got) < 67 {
		t.Errorf("two leads: %d intervals, %d of them off 800 ms (%v); want at least 67, none off by more than 40 ms (the first lead alone: %d)", len(got), off(got), got, off(alone))
	}
	for _, c := range []struct {
		name  string
		r     *replay.Recording
		leads int
	}{{"a record of two, by default", two, 0}, {"a record of two, one lead", two, 1}, {"a record of one", one, 1}} {
		if got := hrOfReplay(t, c.r, c.leads); !slices.Equal(got, alone) {
			t.Errorf("%s: intervals %v; want the first lead's %v", c.name, got, alone)
		}
	}

	// the first lead through the front end's filters and the single-lead
	// detector
	src := replay.NewSource(0, nil, one)
	hp, _ := signal.Butterworth(signal.HighPass, 2, 0.5, rate)
	lp, _ := signal.Butterworth(signal.LowPass, 2, 40, rate)
	det := signal.NewQRSDetector(rate)
	buf := make([]float64, rate/4)
	last := int64(-1)
	var want []uint16
	for k := int64(0); k < 59*rate; k += int64(len(buf)) {
		src.FillECG(buf, time.Duration(k*int64(time.Second)/rate), time.Second/rate)
		for _, x := range buf {
			det.Feed(lp.Step(hp.Step(x)))
			for r, ok := det.Pop(); ok; r, ok = det.Pop() {
				if rr := float64(r-last) * 1000 / rate; last >= 0 && rr >= meas.HRMin && rr <= meas.HRMax {
					want = append(want, uint16(rr+0.5))
				}
				last = r
			}
		}
	}
	if !slices.Equal(alone, want) {
		t.Errorf("one lead: intervals %v; want the single-lead detector's %v", alone, want)
	}
}

// TestHeartRateSourceChanged changes a running heart rate's source from the
// model, of one lead, to a replay offering two: the noise bursts of the
// replay's first lead make no false beat, so its second lead is used from
// the change on.
func TestHeartRateSourceChanged(t *testing.T) {
	hea, dat := twoLeadRecord(2)
	r, err := replay.WFDB("tl.hea", hea, dat, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, "start:\n  heartRate: 60\n")})
	hr := d.Subscribe("/Meas/HR")
	d.Advance(10 * time.Second)
	if len(hr.Contents()) < 5 {
		t.Fatal("no heart rate from the model")
	}
	src := replay.NewSource(d.Clock.Now(), d.Device.Model, r)
	if err := src.SetHRLeads(2); err != nil {
		t.Fatal(err)
	}
	d.Device.HR.SetSource(src)
	d.Advance(3 * time.Second) // the replay's detector learning
	hr.Contents()
	d.Advance(50 * time.Second)
	var rr []uint16
	for _, c := range hr.Contents() {
		rr = append(rr, c.(*content.HRData).RRData...)
	}
	off := 0
	for _, v := range rr {
		if v < 760 || v > 840 {
			off++
		}
	}
	if off > 0 || len(rr) < 55 {
		t.Errorf("after the change to two leads: %d intervals, %d off 800 ms by more than 40 ms (%v); want at least 55, none off", len(rr), off, rr)
	}
}

// twoLeadRig starts a device replaying twoLeadRecord's record of two
// leads, and returns it with a source of its own of that record, from the
// device's time, to give its heart rate (HR.SetSource).
func twoLeadRig(t *testing.T) (*sbt.Rig, *replay.Source) {
	t.Helper()
	hea, dat := twoLeadRecord(2)
	r, err := replay.WFDB("tl.hea", hea, dat, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := sbt.New(t, senseboard.Config{Replay: []*replay.Recording{r}})
	return d, replay.NewSource(d.Clock.Now(), d.Device.Model, r)
}

// TestHeartRateLeadsChanged gives a running heart rate's replay two leads
// (SetHRLeads) in the middle of its first lead's noise: the false beats
// the first lead alone made stop from the change on.
func TestHeartRateLeadsChanged(t *testing.T) {
	d, src := twoLeadRig(t)
	d.Device.HR.SetSource(src)
	hr := d.Subscribe("/Meas/HR")
	off := func() (n int, rr []uint16) {
		for _, c := range hr.Contents() {
			rr = append(rr, c.(*content.HRData).RRData...)
		}
		for _, v := range rr {
			if v < 760 || v > 840 {
				n++
			}
		}
		return n, rr
	}
	d.Advance(30 * time.Second)
	if n, rr := off(); n < 3 {
		t.Fatalf("one lead: %d intervals off 800 ms by more than 40 ms (%v); the test needs at least 3", n, rr)
	}
	if err := src.SetHRLeads(2); err != nil {
		t.Fatal(err)
	}
	d.Advance(3 * time.Second) // the new detector learning
	off()
	d.Advance(25 * time.Second)
	if n, rr := off(); n > 0 || len(rr) < 25 {
		t.Errorf("after SetHRLeads(2): %d intervals, %d off 800 ms by more than 40 ms (%v); want at least 25, none off", len(rr), n, rr)
	}
}

// leadsSpy is a heart rate's source, a replay, that records whether each
// batch the heart rate reads is of two leads (FillTwoLeads) or one
// (FillECG). When flip is set, it answers TwoLeads itself, no, yes, no,
// ... in turn, in place of the replay.
type leadsSpy struct {
	*replay.Source
	flip bool

	mu      sync.Mutex
	reads   []bool // per batch read, true for two leads
	answers []bool // TwoLeads' answers, when flip is set
}

func (s *leadsSpy) TwoLeads() bool {
	if !s.flip {
		return s.Source.TwoLeads()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	two := len(s.answers)%2 == 1
	s.answers = append(s.answers, two)
	return two
}

func (s *leadsSpy) FillECG(dst []float64, t0, dt time.Duration) {
	s.read(false)
	s.Source.FillECG(dst, t0, dt)
}

func (s *leadsSpy) FillTwoLeads(lead0, lead1 []float64, t0, dt time.Duration) {
	s.read(true)
	s.Source.FillTwoLeads(lead0, lead1, t0, dt)
}

func (s *leadsSpy) read(two bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads = append(s.reads, two)
}

// taken returns the batches read so far and TwoLeads' answers.
func (s *leadsSpy) taken() (reads, answers []bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reads), slices.Clone(s.answers)
}

// TestHeartRateLeadsAtNextBatch changes a running heart rate's replay
// between one lead and two (SetHRLeads) before batches of its stream, a
// quarter of a second each on the device's virtual clock: each batch reads
// the leads set before it, the next batch after the change and every one
// after it.
func TestHeartRateLeadsAtNextBatch(t *testing.T) {
	d, src := twoLeadRig(t)
	spy := &leadsSpy{Source: src}
	d.Device.HR.SetSource(spy)
	d.Subscribe("/Meas/HR")
	var want []bool
	for _, leads := range []int{1, 2, 2, 1, 2, 1, 1, 2, 2, 2, 1} {
		if err := src.SetHRLeads(leads); err != nil {
			t.Fatal(err)
		}
		d.Advance(time.Second / 4) // a batch: 64 samples at 256 Hz
		want = append(want, leads == 2)
		if reads, _ := spy.taken(); !slices.Equal(reads, want) {
			t.Fatalf("at %v, batches read two leads %v; want %v", d.Clock.Now(), reads, want)
		}
	}
}

// TestHeartRateLeadsAskedOnce gives a heart rate a source whose leads
// change each time it is asked, as a replay's do when another goroutine
// calls SetHRLeads between two questions: each batch reads, and detects,
// the leads of the one answer it was given, one lead and two in turn,
// without a panic.
func TestHeartRateLeadsAskedOnce(t *testing.T) {
	d, src := twoLeadRig(t)
	spy := &leadsSpy{Source: src, flip: true}
	d.Device.HR.SetSource(spy)
	d.Subscribe("/Meas/HR")
	d.Advance(3 * time.Second)
	reads, answers := spy.taken()
	if len(reads) != 12 || len(answers) != len(reads)+1 || !slices.Equal(reads, answers[1:]) {
		t.Errorf("batches read two leads %v, TwoLeads answered %v; want 12 batches, each of the answer given it (the first answer the subscription's)", reads, answers)
	}
}

// TestHeartRateLeadsBackToOne gives a running heart rate's replay two
// leads, then one again (SetHRLeads): from then on it detects on the one
// lead, each beat notified when, and as, a heart rate that had one lead
// throughout notifies it, not 1.5 s later as a detector of two leads waits
// for a beat the second lead does not give.
func TestHeartRateLeadsBackToOne(t *testing.T) {
	notified := func(first int) []string {
		d, src := twoLeadRig(t)
		d.Device.HR.SetSource(src)
		if err := src.SetHRLeads(first); err != nil {
			t.Fatal(err)
		}
		hr := d.Subscribe("/Meas/HR")
		d.Advance(8 * time.Second)
		if err := src.SetHRLeads(1); err != nil {
			t.Fatal(err)
		}
		d.Advance(4 * time.Second) // a detector started at the change learning
		hr.Contents()
		var got []string
		for range 24 { // 6 s, a batch at a time
			d.Advance(time.Second / 4)
			for _, c := range hr.Contents() {
				got = append(got, fmt.Sprintf("%v %v", d.Clock.Now(), c.(*content.HRData).RRData))
			}
		}
		return got
	}
	want := notified(1)
	if len(want) < 6 {
		t.Fatalf("one lead throughout: %d beats notified in 6 s (%q); the test needs at least 6", len(want), want)
	}
	if got := notified(2); !slices.Equal(got, want) {
		t.Errorf("two leads, then one: beats notified at %q; want %q, as on one lead throughout", got, want)
	}
}
