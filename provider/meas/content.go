package meas

import (
	"strconv"

	"senseboard/resource"
	"senseboard/sensor"
)

// MaxBatch is the most samples of one kind in a motion notification.
const MaxBatch = 8

// MotionData is a notification of an accelerometer, gyroscope,
// magnetometer or IMU stream: the arrays the stream carries, synchronized
// sample for sample.
type MotionData struct {
	Timestamp uint32       `json:"Timestamp"`
	ArrayAcc  []sensor.XYZ `json:"ArrayAcc,omitempty"`
	ArrayGyro []sensor.XYZ `json:"ArrayGyro,omitempty"`
	ArrayMagn []sensor.XYZ `json:"ArrayMagn,omitempty"`
}

// motionData8, motionData16 and motionData24 are a MotionData with room for
// its arrays beside it, so that a notification is one allocation sized to
// what it carries: IMU6 at 52 Hz (two arrays of four samples) takes 176
// bytes, not the 384 of room for three full arrays.
type (
	motionData8 struct {
		m     MotionData
		store [8]sensor.XYZ
	}
	motionData16 struct {
		m     MotionData
		store [16]sensor.XYZ
	}
	motionData24 struct {
		m     MotionData
		store [3 * MaxBatch]sensor.XYZ
	}
)

// newMotionData returns a notification stamped ts whose arrays of the
// kind's sensors hold n samples each (n at most MaxBatch), in one
// allocation.
func newMotionData(ts uint32, k motionKind, n int) *MotionData {
	var m *MotionData
	var store []sensor.XYZ
	switch size := n * k.sensors(); {
	case size <= 8:
		w := new(motionData8)
		m, store = &w.m, w.store[:]
	case size <= 16:
		w := new(motionData16)
		m, store = &w.m, w.store[:]
	default:
		w := new(motionData24)
		m, store = &w.m, w.store[:]
	}
	m.Timestamp = ts
	take := func() []sensor.XYZ {
		a := store[:n:n]
		store = store[n:]
		return a
	}
	if k.acc() {
		m.ArrayAcc = take()
	}
	if k.gyro() {
		m.ArrayGyro = take()
	}
	if k.magn() {
		m.ArrayMagn = take()
	}
	return m
}

func appendXYZs(b []byte, key string, v []sensor.XYZ) []byte {
	if v == nil {
		return b
	}
	b = append(b, `,"`...)
	b = append(b, key...)
	b = append(b, `":`...)
	return sensor.AppendXYZs(b, v)
}

// AppendJSON appends the notification without allocating.
func (m *MotionData) AppendJSON(b []byte) []byte {
	b = append(b, `{"Timestamp":`...)
	b = strconv.AppendUint(b, uint64(m.Timestamp), 10)
	b = appendXYZs(b, "ArrayAcc", m.ArrayAcc)
	b = appendXYZs(b, "ArrayGyro", m.ArrayGyro)
	b = appendXYZs(b, "ArrayMagn", m.ArrayMagn)
	return append(b, '}')
}

// ECGData is a notification of /Meas/ECG/{RequiredSampleRate}: samples in
// units of 0.38147 microvolt.
type ECGData struct {
	Samples   []int32 `json:"Samples"`
	Timestamp uint32  `json:"Timestamp"`

	store [ECGArraySize]int32
}

// AppendJSON appends the notification without allocating.
func (e *ECGData) AppendJSON(b []byte) []byte {
	b = append(b, `{"Samples":[`...)
	for i, v := range e.Samples {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(v), 10)
	}
	b = append(b, `],"Timestamp":`...)
	b = strconv.AppendUint(b, uint64(e.Timestamp), 10)
	return append(b, '}')
}

// ECGDataMV is a notification of /Meas/ECG/{RequiredSampleRate}/mV.
type ECGDataMV struct {
	Samples   []float32 `json:"Samples"`
	Timestamp uint32    `json:"Timestamp"`

	store [ECGArraySize]float32
}

// AppendJSON appends the notification without allocating.
func (e *ECGDataMV) AppendJSON(b []byte) []byte {
	b = append(b, `{"Samples":[`...)
	for i, v := range e.Samples {
		if i > 0 {
			b = append(b, ',')
		}
		b = resource.AppendFloat32(b, v)
	}
	b = append(b, `],"Timestamp":`...)
	b = strconv.AppendUint(b, uint64(e.Timestamp), 10)
	return append(b, '}')
}

// HRData is a notification of /Meas/HR.
type HRData struct {
	Average float32 `json:"average"`
	// rr backs RRData of a beat's notification, one allocation; beside
	// Average it takes no room of its own.
	rr     [1]uint16
	RRData []uint16 `json:"rrData"`
}

// newHRData returns a beat's notification: the average and the beat's
// interval rr, in one allocation.
func newHRData(average float32, rr uint16) *HRData {
	h := &HRData{Average: average}
	h.rr[0] = rr
	h.RRData = h.rr[:]
	return h
}

// AppendJSON appends the notification as encoding/json would.
func (h *HRData) AppendJSON(b []byte) []byte {
	b = append(b, `{"average":`...)
	b = resource.AppendFloat32(b, h.Average)
	if h.RRData == nil {
		return append(b, `,"rrData":null}`...)
	}
	b = append(b, `,"rrData":[`...)
	for i, v := range h.RRData {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(v), 10)
	}
	return append(b, "]}"...)
}

// TempData is the content of GET /Meas/Temp and its notifications.
type TempData struct {
	Timestamp   uint32  `json:"Timestamp"`
	Measurement float32 `json:"Measurement"`
}
