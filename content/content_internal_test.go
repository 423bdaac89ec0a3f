package content

import (
	"math"
	"runtime"
	"testing"
	"unsafe"

	"senseboard/sensor"
)

// A motion notification's arrays are the kind's, n samples each, apart
// from one another, and one allocation holds them sized to what they carry.
func TestNewMotionData(t *testing.T) {
	for kind := 1; kind < 8; kind++ { // the sensors on: bit 0 acc, 1 gyro, 2 magn
		acc, gyro, magn := kind&1 != 0, kind&2 != 0, kind&4 != 0
		k := kind
		for n := 1; n <= MaxBatch; n++ {
			m := NewMotionData(7, n, acc, gyro, magn)
			arrays := []struct {
				on bool
				a  []sensor.XYZ
			}{{acc, m.ArrayAcc}, {gyro, m.ArrayGyro}, {magn, m.ArrayMagn}}
			for i, x := range arrays {
				if !x.on {
					if x.a != nil {
						t.Errorf("kind %d, n %d: array %d present, want none", k, n, i)
					}
					continue
				}
				if len(x.a) != n || cap(x.a) != n {
					t.Errorf("kind %d, n %d: array %d len %d cap %d, want %d", k, n, i, len(x.a), cap(x.a), n)
				}
				for j := range x.a {
					x.a[j] = sensor.XYZ{X: float32(i + 1)}
				}
			}
			for i, x := range arrays {
				for _, v := range x.a {
					if v.X != float32(i+1) {
						t.Fatalf("kind %d, n %d: array %d overlaps another", k, n, i)
					}
				}
			}
			if m.Timestamp != 7 {
				t.Errorf("Timestamp %d, want 7", m.Timestamp)
			}
		}
	}
	if n := testing.AllocsPerRun(10, func() { NewMotionData(0, MaxBatch, true, true, true) }); n != 1 {
		t.Errorf("NewMotionData allocates %v times, want 1", n)
	}
	// IMU6 at 52 Hz: two arrays of four samples fit the smallest room. Other
	// goroutines of the test binary can only add to what is counted, so the
	// least of a few tries is the figure.
	var ms runtime.MemStats
	sink := make([]*MotionData, 100)
	per := uint64(math.MaxUint64)
	for range 5 {
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		for i := range sink {
			sink[i] = NewMotionData(0, 4, true, true, false) // IMU6 at 52 Hz: 4 samples a batch
		}
		runtime.ReadMemStats(&ms)
		per = min(per, (ms.TotalAlloc-before)/uint64(len(sink)))
	}
	if want := uint64(unsafe.Sizeof(motionData8{})) + 16; per > want {
		t.Errorf("an IMU6 notification at 52 Hz takes %d bytes, want at most %d", per, want)
	}
}

// A beat's heart-rate notification carries its interval and is one
// allocation.
func TestNewHRData(t *testing.T) {
	h := NewHRData(61.5, 975)
	if h.Average != 61.5 || len(h.RRData) != 1 || h.RRData[0] != 975 {
		t.Fatalf("got average %v, intervals %v; want 61.5, [975]", h.Average, h.RRData)
	}
	if n := testing.AllocsPerRun(10, func() { NewHRData(60, 1000) }); n != 1 {
		t.Errorf("NewHRData allocates %v times, want 1", n)
	}
}

// exactFloat32 takes the numbers whose digits make a mantissa below 2^23
// and whose power of ten is at most 10 either way, and no others; what it
// takes it converts as strconv.ParseFloat does (FuzzExactFloat32).
func TestExactFloat32Reach(t *testing.T) {
	for _, tt := range []struct {
		n    string
		want float32 // 0 for a number it leaves to strconv
	}{
		{"-0.981057", -0.981057},
		{"-9.810573", 0},
		{"0.07", 0.07},
		{"8388607", 8388607},
		{"8388608", 0},
		{"838860.8", 0},
		{"1e10", 1e10},
		{"1E+10", 1e10},
		{"1e11", 0},
		{"1e-10", 1e-10},
		{"1e-11", 0},
		{"12.5e-3", 0.0125},
		{"0.5e-10", 0},
		{"10e-11", 0},
	} {
		f, ok := exactFloat32([]byte(tt.n))
		if ok != (tt.want != 0) || f != tt.want {
			t.Errorf("exactFloat32(%s) = %v, %t; want %v, %t", tt.n, f, ok, tt.want, tt.want != 0)
		}
	}
}

// A notification from NewMotionData or NewECGData goes back for reuse once
// its last holder releases it, and comes back cleared; one that a holder
// keeps, or still holds, never does.
func TestNotificationsRecycled(t *testing.T) {
	const tries = 100 // the pools may drop what goes back (under the race detector, a quarter)
	reused := 0
	for range tries {
		m := NewMotionData(7, 4, true, true, false)
		m.ArrayAcc[3] = sensor.XYZ{X: 1}
		m.Release()
		again := NewMotionData(8, 4, true, true, false)
		if again == m {
			reused++
		}
		if again.Timestamp != 8 || len(again.ArrayAcc) != 4 || len(again.ArrayGyro) != 4 || again.ArrayMagn != nil || again.ArrayAcc[3] != (sensor.XYZ{}) {
			t.Fatalf("a motion notification taken again = %+v, want stamped 8 with 4 zero samples of acc and gyro", again)
		}
		again.Release()
	}
	if reused == 0 {
		t.Errorf("a released motion notification was never reused in %d tries", tries)
	}

	reused = 0
	for range tries {
		e := NewECGData(7, 16)
		e.Samples[15] = 9
		e.Release()
		again := NewECGData(8, 16)
		if again == e {
			reused++
		}
		if again.Timestamp != 8 || len(again.Samples) != 16 || again.Samples[15] != 0 {
			t.Fatalf("an ECG notification taken again = %+v, want stamped 8 with 16 zero samples", again)
		}
		again.Release()
	}
	if reused == 0 {
		t.Errorf("a released ECG notification was never reused in %d tries", tries)
	}

	for _, spare := range []struct {
		name string
		f    func(*MotionData)
	}{
		{"kept", func(m *MotionData) { m.Keep() }},
		{"held", func(m *MotionData) { m.Hold() }},
		// Every sink that is no queue keeps it: as many as subscribe.
		{"kept by 16 sinks", func(m *MotionData) {
			for range 16 {
				m.Keep()
			}
		}},
		// A sink that kept it hands it on to a consumer that releases
		// what it encodes (the radio's sessions).
		{"kept, released more than held", func(m *MotionData) {
			m.Keep()
			m.Release()
			m.Release()
		}},
	} {
		for range tries {
			m := NewMotionData(7, 4, true, true, false) // 8 samples: the smallest pool
			spare.f(m)
			m.Release()
			if again := NewMotionData(8, 4, true, true, false); again == m {
				t.Fatalf("a motion notification %s was reused", spare.name)
			}
			// Nor does it go to the pool of another size.
			for _, magn := range []bool{false, true} { // 16 samples, 24
				if again := NewMotionData(8, MaxBatch, true, true, magn); again == m {
					t.Fatalf("a motion notification %s was taken again for a larger one", spare.name)
				}
			}
		}
	}

	// One not made by NewMotionData has nothing to go back to.
	m := &MotionData{Timestamp: 1}
	m.Hold()
	m.Release()
	m.Release()
	if m.Timestamp != 1 {
		t.Errorf("a motion notification made as a literal changed on release: %+v", m)
	}
	for _, magn := range []bool{false, true} {
		for _, n := range []int{1, MaxBatch} {
			if again := NewMotionData(8, n, true, true, magn); again == m {
				t.Fatal("a motion notification made as a literal was taken from a pool")
			}
		}
	}
}

// A pooled notification stamped anew (WithTimestamp) gives a copy that is
// not pooled, whose release gives nothing back, and the copy's samples
// stay its own: a motion original is kept from its pool, whose arrays the
// copy shares, and an ECG copy has samples of its own.
func TestWithTimestampOfPooled(t *testing.T) {
	m := NewMotionData(1, 4, true, true, false)
	m.ArrayAcc[0].X = 7
	mc := WithTimestamp(m, 2).(*MotionData)
	if mc.refs>>poolShift != noPool {
		t.Errorf("the copy of a pooled motion notification names pool %d; want none", mc.refs>>poolShift)
	}
	if mc.Timestamp != 2 || mc.ArrayAcc[0].X != 7 || len(mc.ArrayGyro) != 4 {
		t.Errorf("the copy: %+v", mc)
	}
	m.Release() // its maker's hold: kept, it stays
	if m.refs&kept == 0 {
		t.Error("a pooled motion notification whose arrays a copy shares can still go back to its pool")
	}

	e := NewECGData(1, 3)
	e.Samples[0] = 5
	ec := WithTimestamp(e, 2).(*ECGData)
	if ec.refs>>poolShift != noPool {
		t.Errorf("the copy of a pooled ECG notification names pool %d; want none", ec.refs>>poolShift)
	}
	e.Samples[0] = 9 // as a reuse of it would
	if ec.Timestamp != 2 || len(ec.Samples) != 3 || ec.Samples[0] != 5 {
		t.Errorf("the copy after its original changed: %+v", ec)
	}
	e.Release()
}

// A release of a pooled notification that went back already, one more
// than its holds, leaves its word as its pool left it: its pool and no
// holds, not kept.
func TestReleaseOfReleased(t *testing.T) {
	for _, c := range []struct {
		name string
		make func() (interface{ Release() }, *uint32)
	}{
		{"motion", func() (interface{ Release() }, *uint32) {
			m := NewMotionData(1, 4, true, true, false)
			return m, &m.refs
		}},
		{"ECG", func() (interface{ Release() }, *uint32) {
			e := NewECGData(1, 16)
			return e, &e.refs
		}},
	} {
		n, refs := c.make()
		n.Release() // its maker's hold: it goes back
		before := *refs
		n.Release()
		if *refs != before || before&holdsMask != 0 || before&kept != 0 {
			t.Errorf("%s: a second release turned the word %#x into %#x; want it unchanged, no holds, not kept", c.name, before, *refs)
		}
	}
}
