package meas_test

import (
	"senseboard/content"
	"testing"

	"senseboard/sensor"
)

func BenchmarkMotionDataAppendJSON(b *testing.B) {
	m := &content.MotionData{Timestamp: 123456}
	m.ArrayAcc = make([]sensor.XYZ, 8)
	m.ArrayGyro = make([]sensor.XYZ, 8)
	m.ArrayMagn = make([]sensor.XYZ, 8)
	for i := range 8 {
		m.ArrayAcc[i] = sensor.XYZ{X: -9.817751, Y: 0.0023928226, Z: -0.016749758}
		m.ArrayGyro[i] = sensor.XYZ{X: 0.35, Y: -1.12, Z: 0.07}
		m.ArrayMagn[i] = sensor.XYZ{X: 12.45, Y: -30.15, Z: 41.7}
	}
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = m.AppendJSON(buf[:0])
	}
}

func BenchmarkECGDataAppendJSON(b *testing.B) {
	e := &content.ECGData{Timestamp: 123456, Samples: []int32{1, -22, 333, 4444, -5555, 6, 77, 888, 9, 10, 11, 12, 13, 14, 15, 16}}
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = e.AppendJSON(buf[:0])
	}
}
