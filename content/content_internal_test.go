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
