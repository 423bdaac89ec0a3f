// Package content is the content model of the device's measurements: the
// notifications of the measurement streams (MotionData, ECGData, ECGDataMV,
// HRData, TempData), the capability and configuration records of /Meas,
// and the time record the data logger writes (DetailedTime); their JSON,
// their binary form as firmware 2.3 sends it over GSP and the data logger
// writes it to its logs (Append), and the size of that form (Size); the
// pools that the streams' motion and ECG notifications come from and go
// back to (recycle.go). The providers that make them, the GSP module, the
// data logger, the radio's throughput model and the load all use this one
// package.
package content

import (
	"strconv"

	"senseboard/resource"
	"senseboard/sensor"
)

// MaxBatch is the most samples of one kind in a motion notification.
const MaxBatch = 8

// ECGArraySize is the samples per ECG notification.
const ECGArraySize = 16

// MotionData is a notification of an accelerometer, gyroscope,
// magnetometer or IMU stream: the arrays the stream carries, synchronized
// sample for sample.
//
// A MotionData is used through its pointer: a copy would share its holds
// and pool, and releasing it would give the pool memory that is not the
// pool's (go vet reports copies).
type MotionData struct {
	Timestamp uint32 `json:"Timestamp"`
	refs      uint32 // of one made by NewMotionData: its pool and holders (recycle.go)
	_         noCopy

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

// NewMotionData returns a notification stamped ts whose arrays of the
// accelerometer, gyroscope and magnetometer, those that are on, hold n
// samples each (n at most MaxBatch), in one allocation, their samples
// zero. It comes from a pool: its maker releases it once published
// (Release).
func NewMotionData(ts uint32, n int, acc, gyro, magn bool) *MotionData {
	sensors := 0
	for _, on := range []bool{acc, gyro, magn} {
		if on {
			sensors++
		}
	}
	m, store := motionStore(n * sensors)
	m.Timestamp = ts
	take := func() []sensor.XYZ {
		a := store[:n:n]
		store = store[n:]
		return a
	}
	if acc {
		m.ArrayAcc = take()
	}
	if gyro {
		m.ArrayGyro = take()
	}
	if magn {
		m.ArrayMagn = take()
	}
	return m
}

// appendJSONXYZs appends the JSON member key of the samples v, when there
// are any.
func appendJSONXYZs(b []byte, key string, v []sensor.XYZ) []byte {
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
	b = appendJSONXYZs(b, "ArrayAcc", m.ArrayAcc)
	b = appendJSONXYZs(b, "ArrayGyro", m.ArrayGyro)
	b = appendJSONXYZs(b, "ArrayMagn", m.ArrayMagn)
	return append(b, '}')
}

// ECGData is a notification of /Meas/ECG/{RequiredSampleRate}: samples in
// units of 0.38147 microvolt.
//
// An ECGData is used through its pointer: a copy would share its holds
// and pool, and its samples, and releasing it would give the pool one it
// did not make (go vet reports copies).
type ECGData struct {
	Samples   []int32 `json:"Samples"`
	Timestamp uint32  `json:"Timestamp"`

	refs uint32 // of one made by NewECGData: its pool and holders (recycle.go)
	_    noCopy

	store [ECGArraySize]int32
}

// NewECGData returns a notification stamped ts with room for n samples (n
// at most ECGArraySize), in one allocation, its samples zero. It comes
// from a pool: its maker releases it once published (Release).
func NewECGData(ts uint32, n int) *ECGData {
	e := ecgStore()
	e.Timestamp, e.Samples = ts, e.store[:n:n]
	return e
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

// NewECGDataMV returns a notification stamped ts with room for n samples
// (n at most ECGArraySize), in one allocation.
func NewECGDataMV(ts uint32, n int) *ECGDataMV {
	e := &ECGDataMV{Timestamp: ts}
	e.Samples = e.store[:n:n]
	return e
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

// NewHRData returns a beat's notification: the average and the beat's
// interval rr, in one allocation.
func NewHRData(average float32, rr uint16) *HRData {
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

// AccInfo is the content of GET /Meas/Acc/Info.
type AccInfo struct {
	SampleRates []uint16 `json:"SampleRates"`
	Ranges      []uint16 `json:"Ranges"`
}

// IMUInfo is the content of GET /Meas/IMU/Info.
type IMUInfo struct {
	SampleRates []uint16 `json:"SampleRates"`
	AccRanges   []uint16 `json:"AccRanges"`
	GyroRanges  []uint16 `json:"GyroRanges"`
	MagnRanges  []uint16 `json:"MagnRanges"`
}

// ECGInfo is the content of GET /Meas/ECG/Info.
type ECGInfo struct {
	CurrentSampleRate    uint16    `json:"CurrentSampleRate"`
	AvailableSampleRates []uint16  `json:"AvailableSampleRates"`
	ArraySize            uint16    `json:"ArraySize"`
	LowPass              []float32 `json:"LowPass"`
	HighPass             []float32 `json:"HighPass"`
}

// ECGConfig is the ECG filter configuration; nil means bypass.
type ECGConfig struct {
	LowPass  *float32 `json:"LowPass"`
	HighPass *float32 `json:"HighPass"`
}

// HRInfo is the content of GET /Meas/HR/Info.
type HRInfo struct {
	Min      uint16 `json:"Min"`
	Max      uint16 `json:"Max"`
	Accuracy uint16 `json:"Accuracy"`
}

// TempInfo is the content of GET /Meas/Temp/Info.
type TempInfo struct {
	Min      int32 `json:"Min"`
	Max      int32 `json:"Max"`
	Accuracy int32 `json:"Accuracy"`
}

// DetailedTime is the content of GET /Time/Detailed, which the data logger
// records when it starts.
type DetailedTime struct {
	UTCTime      int64  `json:"utcTime"`
	RelativeTime uint32 `json:"relativeTime"`
	TickRate     uint32 `json:"tickRate"`
	Accuracy     uint32 `json:"accuracy"`
}
