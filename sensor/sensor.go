// Package sensor owns the device's sensors: the sources the measurement
// resources read, and the models behind them. A model source turns the
// wearer (package world) into what the device's IMU, ECG front end and
// thermometer would report, with their noise, offsets, resolution and
// ranges; a replay source (package replay) plays a recording instead.
//
// Sources are pure functions of time (and of the device's seed): a stream
// asks for the samples at its sample times, in any order, and the same
// times give the same values.
package sensor

import (
	"encoding/json"
	"math"
	"sync"
	"time"

	"senseboard/resource"
)

// XYZ is one three-axis sample as the interface carries it.
type XYZ struct {
	X, Y, Z float32
}

// AppendJSON appends {"x":..,"y":..,"z":..} as encoding/json would.
func (v XYZ) AppendJSON(b []byte) []byte {
	b = append(b, `{"x":`...)
	b = resource.AppendFloat32(b, v.X)
	b = append(b, `,"y":`...)
	b = resource.AppendFloat32(b, v.Y)
	b = append(b, `,"z":`...)
	b = resource.AppendFloat32(b, v.Z)
	return append(b, '}')
}

// AppendXYZs appends the samples as a JSON array, as encoding/json would.
func AppendXYZs(b []byte, v []XYZ) []byte {
	c := floatCaches.Get().(*resource.Float32Cache)
	b = append(b, '[')
	for i, s := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"x":`...)
		b = c.Append(b, s.X)
		b = append(b, `,"y":`...)
		b = c.Append(b, s.Y)
		b = append(b, `,"z":`...)
		b = c.Append(b, s.Z)
		b = append(b, '}')
	}
	floatCaches.Put(c)
	return append(b, ']')
}

// floatCaches hold the encodings of recent sample values: samples are
// quantized and repeat often, so encoding a stream looks most of its values
// up instead of formatting them.
var floatCaches = sync.Pool{New: func() any { return new(resource.Float32Cache) }}

// MarshalJSON encodes the sample with lower-case keys.
func (v XYZ) MarshalJSON() ([]byte, error) { return v.AppendJSON(nil), nil }

// UnmarshalJSON decodes {"x":..,"y":..,"z":..}.
func (v *XYZ) UnmarshalJSON(data []byte) error {
	var w struct{ X, Y, Z float32 }
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*v = XYZ(w)
	return nil
}

// Ranges are the measurement ranges in force.
type Ranges struct {
	Acc  int // g
	Gyro int // deg/s
}

// IMUSource gives motion samples.
type IMUSource interface {
	// FillIMU writes the samples at t0, t0+dt, ... into the non-nil slices
	// (all of the same length): acceleration in m/s^2, angular velocity in
	// deg/s, magnetic field in microtesla, clipped to the ranges.
	FillIMU(acc, gyro, magn []XYZ, t0, dt time.Duration, r Ranges)
}

// ECGSource gives the electrical signal at the electrodes.
type ECGSource interface {
	// FillECG writes the signal in millivolts at t0, t0+dt, ... into dst,
	// before the front end's filters.
	FillECG(dst []float64, t0, dt time.Duration)
	// Contact reports whether the electrodes touch the skin at t.
	Contact(t time.Duration) bool
}

// TwoLeadSource is an ECGSource that may give a second lead of the same
// ECG, sampled with the first: a replayed record of two leads, when the
// replay offers both. The device has one lead; its heart rate uses both
// where a source offers them.
type TwoLeadSource interface {
	ECGSource
	// TwoLeads reports whether the source offers a second lead.
	TwoLeads() bool
	// FillTwoLeads writes the first lead, as FillECG does, into lead0 and
	// the second into lead1 (of the same length), in millivolts at t0,
	// t0+dt, ..., before the front end's filters.
	FillTwoLeads(lead0, lead1 []float64, t0, dt time.Duration)
}

// SecondLead returns src as a TwoLeadSource when it offers a second lead,
// and nil when it offers one.
func SecondLead(src ECGSource) TwoLeadSource {
	if two, ok := src.(TwoLeadSource); ok && two.TwoLeads() {
		return two
	}
	return nil
}

// TempSource gives the temperature.
type TempSource interface {
	// Temperature returns the reading in kelvin at t, and false when the
	// source has none.
	Temperature(t time.Duration) (float64, bool)
}

// quantizer rounds to a resolution and clips to a range.
type quantizer struct{ lsb, inv, limit float64 }

func newQuantizer(lsb, limit float64) quantizer { return quantizer{lsb, 1 / lsb, limit} }

func (q quantizer) one(v float64) float32 {
	r := math.Round(v*q.inv) * q.lsb
	switch {
	case r == 0:
		return 0 // not -0
	case r > q.limit:
		r = q.limit
	case r < -q.limit:
		r = -q.limit
	}
	return float32(r)
}

func (q quantizer) xyz(x, y, z float64) XYZ { return XYZ{q.one(x), q.one(y), q.one(z)} }

// ECGUnit is one unit of the integer ECG samples, in millivolts (0.38147 uV).
const ECGUnit = 0.00038147
