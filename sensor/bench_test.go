package sensor

import (
	"testing"
	"time"

	"senseboard/world"
)

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
	for b.Loop() {
		m.FillIMU(acc, gyro, magn, t, dt, Ranges{Acc: 8, Gyro: 2000})
		t += 8 * dt
	}
}

// BenchmarkFillECG generates one ECG notification's samples at 512 Hz.
func BenchmarkFillECG(b *testing.B) {
	m := benchModel(b)
	buf := make([]float64, 16)
	t := time.Minute
	const dt = time.Second / 512
	b.ReportAllocs()
	for b.Loop() {
		m.FillECG(buf, t, dt)
		t += 16 * dt
	}
}
