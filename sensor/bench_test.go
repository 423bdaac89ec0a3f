//go:build unix

package sensor

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"senseboard/world"
)

// cpuTime returns the CPU time this process has used (user and system): on
// a machine shared with other work, wall-clock time per operation says more
// about the neighbours than about the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU time per operation since cpu0.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "ns-CPU/op")
}

func benchModel(b *testing.B) *Model {
	sc, _ := world.ParseScenario([]byte("segments:\n  - walk: 10h\n"))
	return NewModel(world.New(1, sc, 0), 1)
}

// BenchmarkFillIMU generates one IMU9 notification's samples at 1666 Hz.
func BenchmarkFillIMU(b *testing.B) {
	m := benchModel(b)
	acc, gyro, magn := make([]XYZ, 8), make([]XYZ, 8), make([]XYZ, 8)
	t := time.Minute
	const dt = time.Second / 1666
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		m.FillIMU(acc, gyro, magn, t, dt, Ranges{Acc: 8, Gyro: 2000})
		t += 8 * dt
	}
	reportCPU(b, cpu0)
}

// BenchmarkFillECG generates one ECG notification's samples at 512 Hz.
func BenchmarkFillECG(b *testing.B) {
	m := benchModel(b)
	buf := make([]float64, 16)
	t := time.Minute
	const dt = time.Second / 512
	b.ReportAllocs()
	m.FillECG(buf, t, dt) // the track up to t
	cpu0 := cpuTime()
	for b.Loop() {
		m.FillECG(buf, t, dt)
		t += 16 * dt
	}
	reportCPU(b, cpu0)
}

// BenchmarkAppendXYZs encodes IMU6 notifications (eight accelerometer and
// eight gyroscope samples at 52 Hz) of a wearer at rest and walking, as
// the model makes them: the values repeat as quantized samples do.
func BenchmarkAppendXYZs(b *testing.B) {
	for _, act := range []string{"rest", "walk"} {
		b.Run(act, func(b *testing.B) {
			s, _ := world.ParseScenario([]byte("segments:\n  - " + act + ": 10h\n"))
			m := NewModel(world.New(1, s, 0), 1)
			const n, dt = 64, time.Second / 52
			batches := make([][2][]XYZ, n)
			for i := range batches {
				acc, gyro := make([]XYZ, 4), make([]XYZ, 4)
				m.FillIMU(acc, gyro, nil, time.Minute+time.Duration(8*i)*dt, dt, Ranges{Acc: 8, Gyro: 2000})
				batches[i] = [2][]XYZ{acc, gyro}
			}
			buf := make([]byte, 0, 4096)
			b.ReportAllocs()
			cpu0 := cpuTime()
			i := 0
			for b.Loop() {
				bt := &batches[i%n]
				buf = AppendXYZs(AppendXYZs(buf[:0], bt[0]), bt[1])
				i++
			}
			reportCPU(b, cpu0)
		})
	}
}

// BenchmarkFleetECG synthesizes what a fleet device's ECG takes in a
// second, for the default wearer (at rest): the ECG stream's 125 samples in
// batches of 16 and the heart rate's 256 in batches of 64, interleaved as
// the clock runs them. It reports the CPU time per device-second.
func BenchmarkFleetECG(b *testing.B) {
	m := NewModel(world.New(1, nil, 0), 1)
	ecg, hr := make([]float64, 16), make([]float64, 64)
	const ecgDT, hrDT = time.Second / 125, time.Second / 256
	var ke, kh int64 // the next batch of each
	next := func() {
		if te, th := time.Duration(ke+15)*ecgDT, time.Duration(kh+63)*hrDT; te <= th {
			m.FillECG(ecg, time.Duration(ke)*ecgDT, ecgDT)
			ke += 16
		} else {
			m.FillECG(hr, time.Duration(kh)*hrDT, hrDT)
			kh += 64
		}
	}
	cpu := deviceSeconds(b, func() time.Duration { return time.Duration(kh) * hrDT }, next)
	b.ReportMetric(float64(cpu)/float64(b.N), "ns-CPU/op")
}

// deviceSeconds calls next, which synthesizes the next batch of a device's
// streams, until reached, the time the streams have reached, is 10 s, and
// then for a second of them an iteration. It returns the CPU time of the
// iterations.
func deviceSeconds(b *testing.B, reached func() time.Duration, next func()) time.Duration {
	for reached() < 10*time.Second {
		next()
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		for end := reached() + time.Second; reached() < end; {
			next()
		}
	}
	return cpuTime() - cpu0
}

// BenchmarkFleetSynthesis synthesizes what a fleet device's streams take in
// a second: IMU6 at 52 Hz in batches of 4, the ECG at 125 Hz in batches of
// 16 and the heart rate's ECG at 256 Hz in batches of 64, batch by batch in
// the order of their times, for one device alone and for 4,000, whose
// models the processor's caches cannot all hold (as a fleet's other state
// keeps them out). It reports the CPU time per device-second.
func BenchmarkFleetSynthesis(b *testing.B) {
	for _, n := range []int{1, 4000} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) { fleetSynthesis(b, n) })
	}
}

func fleetSynthesis(b *testing.B, n int) {
	models := make([]*Model, n)
	for i := range models {
		models[i] = NewModel(world.New(uint64(1+i), nil, 0), uint64(1+i))
	}
	acc, gyro := make([]XYZ, 4), make([]XYZ, 4)
	ecg, hr := make([]float64, 16), make([]float64, 64)
	const imuDT, ecgDT, hrDT = time.Second / 52, time.Second / 125, time.Second / 256
	var ki, ke, kh int64 // the next batch of each stream
	next := func() {
		ti, te, th := time.Duration(ki+3)*imuDT, time.Duration(ke+15)*ecgDT, time.Duration(kh+63)*hrDT
		switch {
		case ti <= te && ti <= th:
			for _, m := range models {
				m.FillIMU(acc, gyro, nil, time.Duration(ki)*imuDT, imuDT, Ranges{Acc: 8, Gyro: 2000})
			}
			ki += 4
		case te <= th:
			for _, m := range models {
				m.FillECG(ecg, time.Duration(ke)*ecgDT, ecgDT)
			}
			ke += 16
		default:
			for _, m := range models {
				m.FillECG(hr, time.Duration(kh)*hrDT, hrDT)
			}
			kh += 64
		}
	}
	cpu := deviceSeconds(b, func() time.Duration { return time.Duration(kh) * hrDT }, next)
	b.ReportMetric(float64(cpu)/float64(b.N)/float64(n), "ns-CPU/device-s")
}
