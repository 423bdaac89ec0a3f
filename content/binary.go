package content

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"

	"senseboard/resource"
	"senseboard/sensor"
)

// Errors of Append: content that has no binary form (maps, interfaces,
// raw JSON), and an array longer than its uint8 count can say (MaxArray).
var (
	ErrUnencodable = errors.New("content has no binary encoding")
	ErrTooLong     = errors.New("an array is longer than its uint8 count can say")
)

// MaxArray is the most elements an array with a uint8 count carries.
const MaxArray = math.MaxUint8

// Layout is the choice of binary form where the family's clients disagree:
// the zero Layout is the definitions' order, as current sensors send it.
type Layout struct {
	// TempMeasurementFirst puts a TempData's Measurement before its
	// Timestamp, as movesense-py reads /Meas/Temp, where the definition
	// and current sensors put the Timestamp first (docs/gsp.md).
	TempMeasurementFirst bool
}

// Append appends the binary form of content in the definitions' order:
// Layout{}.Append.
func Append(b []byte, content any) ([]byte, error) { return Layout{}.Append(b, content) }

// Append appends the binary form of a notification's or response's
// content, as firmware 2.3 sends it over GSP and its data logger writes
// it: little-endian, no padding, fields in the order of the definition
// but where the firmware has another (docs/gsp.md, Layouts and their
// definitions).
//
// The measurement streams have the firmware's fixed layouts, with no array
// counts (the arrays fill the packet):
//
//	Acc, Gyro, Magn, IMU6, IMU6m, IMU9  uint32 Timestamp, then float32 x,y,z per sample:
//	                                    every Acc sample, then every Gyro, then every Magn
//	ECG                                 uint32 Timestamp, int32 Samples
//	ECG mV                              uint32 Timestamp, int16 Samples in microvolts
//	                                    (mV × 1000, rounded, clamped to ±32767)
//	HR                                  float32 average, uint16 rrData
//	Temp                                uint32 Timestamp, float32 Measurement
//	                                    (the other way round with TempMeasurementFirst)
//
// The ECG streams put the Timestamp first although their definitions list
// the Samples first, as the sensors send them.
//
// The capability records have the widths the firmware sends, which are not
// all those of their definitions (docs/gsp.md, Choices):
//
//	Acc/Info    uint16[] SampleRates, uint8[] Ranges
//	IMU/Info    uint16[] SampleRates, uint8[] AccRanges, uint16[] GyroRanges, uint16[] MagnRanges
//	ECG/Info    [uint16 CurrentSampleRate while measuring], uint16[] AvailableSampleRates,
//	            uint16 ArraySize, uint16[] LowPass, float32[] HighPass
//	ECG/Config  uint16 LowPass, float32 HighPass (each left out when null)
//	HR/Info     uint16 Min, uint16 Max, float32 Accuracy
//	Temp/Info   uint32 Min, uint32 Max, float32 Accuracy
//
// Other content (GET results) is encoded field by field: integers and floats
// at their width, bool as one byte, strings NUL-terminated, arrays with a
// uint8 count before their elements, absent optional fields (nil pointers)
// left out. An array of more than MaxArray elements is refused with
// ErrTooLong, naming it.
func (l Layout) Append(b []byte, content any) ([]byte, error) {
	switch c := content.(type) {
	case nil:
		return b, nil
	case *MotionData:
		b = binary.LittleEndian.AppendUint32(b, c.Timestamp)
		b = appendXYZs(b, c.ArrayAcc)
		b = appendXYZs(b, c.ArrayGyro)
		return appendXYZs(b, c.ArrayMagn), nil
	case *ECGData:
		b = binary.LittleEndian.AppendUint32(b, c.Timestamp)
		for _, s := range c.Samples {
			b = binary.LittleEndian.AppendUint32(b, uint32(s))
		}
		return b, nil
	case *ECGDataMV:
		b = binary.LittleEndian.AppendUint32(b, c.Timestamp)
		for _, s := range c.Samples {
			b = binary.LittleEndian.AppendUint16(b, uint16(MicrovoltsOf(s)))
		}
		return b, nil
	case *HRData:
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(c.Average))
		for _, rr := range c.RRData {
			b = binary.LittleEndian.AppendUint16(b, rr)
		}
		return b, nil
	case *TempData:
		if l.TempMeasurementFirst {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(c.Measurement))
			return binary.LittleEndian.AppendUint32(b, c.Timestamp), nil
		}
		b = binary.LittleEndian.AppendUint32(b, c.Timestamp)
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(c.Measurement)), nil
	case TempData:
		return l.Append(b, &c)
	case *AccInfo:
		w := counted{b: b}
		w.uint16s("SampleRates", c.SampleRates)
		w.uint8s("Ranges", c.Ranges)
		return w.b, w.err
	case *IMUInfo:
		w := counted{b: b}
		w.uint16s("SampleRates", c.SampleRates)
		w.uint8s("AccRanges", c.AccRanges)
		w.uint16s("GyroRanges", c.GyroRanges)
		w.uint16s("MagnRanges", c.MagnRanges)
		return w.b, w.err
	case *ECGInfo:
		if c.CurrentSampleRate != 0 {
			b = binary.LittleEndian.AppendUint16(b, c.CurrentSampleRate)
		}
		w := counted{b: b}
		w.uint16s("AvailableSampleRates", c.AvailableSampleRates)
		if w.err == nil {
			w.b = binary.LittleEndian.AppendUint16(w.b, c.ArraySize)
		}
		w.float32s("LowPass", c.LowPass, func(b []byte, v float32) []byte { return binary.LittleEndian.AppendUint16(b, uint16(v)) })
		w.float32s("HighPass", c.HighPass, func(b []byte, v float32) []byte { return binary.LittleEndian.AppendUint32(b, math.Float32bits(v)) })
		return w.b, w.err
	case *ECGConfig:
		if c.LowPass != nil {
			b = binary.LittleEndian.AppendUint16(b, uint16(*c.LowPass))
		}
		if c.HighPass != nil {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(*c.HighPass))
		}
		return b, nil
	case *HRInfo:
		b = binary.LittleEndian.AppendUint16(b, c.Min)
		b = binary.LittleEndian.AppendUint16(b, c.Max)
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(c.Accuracy))), nil
	case *TempInfo:
		b = binary.LittleEndian.AppendUint32(b, uint32(c.Min))
		b = binary.LittleEndian.AppendUint32(b, uint32(c.Max))
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(c.Accuracy))), nil
	case resource.Value:
		return appendValue(b, c)
	}
	return appendReflect(b, reflect.ValueOf(content), contentName)
}

// Size returns the bytes Append appends for a measurement
// stream's notification, without encoding it, or -1 for other content.
func Size(content any) int {
	switch c := content.(type) {
	case *MotionData:
		return 4 + 12*(len(c.ArrayAcc)+len(c.ArrayGyro)+len(c.ArrayMagn))
	case *ECGData:
		return 4 + 4*len(c.Samples)
	case *ECGDataMV:
		return 4 + 2*len(c.Samples)
	case *HRData:
		return 4 + 2*len(c.RRData)
	case *TempData, TempData:
		return 8
	}
	return -1
}

// MicrovoltsOf converts an ECG sample in millivolts to the int16 microvolts
// of the mV stream: rounded to the nearest microvolt, clamped to ±32.767 mV.
func MicrovoltsOf(mv float32) int16 {
	v := math.Round(float64(mv) * 1000)
	switch {
	case math.IsNaN(v):
		return 0
	case v > math.MaxInt16:
		return math.MaxInt16
	case v < -math.MaxInt16:
		return -math.MaxInt16
	}
	return int16(v)
}

// counted appends arrays with a uint8 count, the form of the firmware's
// Info answers; after the first that is too long, it appends nothing.
type counted struct {
	b   []byte
	err error
}

// count appends the count of an array of n elements named name, and
// reports whether its elements go on.
func (w *counted) count(name string, n int) bool {
	if w.err != nil {
		return false
	}
	if w.err = tooLong(name, n); w.err != nil {
		return false
	}
	w.b = append(w.b, byte(n))
	return true
}

// uint16s appends a count and uint16 elements.
func (w *counted) uint16s(name string, v []uint16) {
	if w.count(name, len(v)) {
		for _, x := range v {
			w.b = binary.LittleEndian.AppendUint16(w.b, x)
		}
	}
}

// uint8s appends a count and the elements one byte each: the
// accelerometer's ranges, which the firmware sends so.
func (w *counted) uint8s(name string, v []uint16) {
	if w.count(name, len(v)) {
		for _, x := range v {
			w.b = append(w.b, byte(x))
		}
	}
}

// float32s appends a count and the elements, each as put appends it.
func (w *counted) float32s(name string, v []float32, put func([]byte, float32) []byte) {
	if w.count(name, len(v)) {
		for _, x := range v {
			w.b = put(w.b, x)
		}
	}
}

// tooLong returns ErrTooLong naming the array when n elements are more
// than its count can say.
func tooLong(name string, n int) error {
	if n > MaxArray {
		return fmt.Errorf("%w: %s has %d elements, at most %d", ErrTooLong, name, n, MaxArray)
	}
	return nil
}

// appendXYZs appends the binary form of the samples v.
func appendXYZs(b []byte, v []sensor.XYZ) []byte {
	for _, s := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(s.X))
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(s.Y))
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(s.Z))
	}
	return b
}

func appendValue(b []byte, v resource.Value) ([]byte, error) {
	switch t := v.Type(); t {
	case resource.TypeNull:
		return b, nil
	case resource.TypeBool:
		if v.Bool() {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case resource.TypeInt8, resource.TypeUint8:
		return append(b, byte(v.Uint())), nil
	case resource.TypeInt16, resource.TypeUint16:
		return binary.LittleEndian.AppendUint16(b, uint16(v.Uint())), nil
	case resource.TypeInt32, resource.TypeUint32:
		return binary.LittleEndian.AppendUint32(b, uint32(v.Uint())), nil
	case resource.TypeInt64, resource.TypeUint64:
		return binary.LittleEndian.AppendUint64(b, v.Uint()), nil
	case resource.TypeFloat32:
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v.Float()))), nil
	case resource.TypeFloat64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Float())), nil
	case resource.TypeString:
		return append(append(b, v.Str()...), 0), nil
	default:
		return b, fmt.Errorf("%w: a %s value", ErrUnencodable, t)
	}
}

// contentName names the content as a whole in errors.
const contentName = "the content"

// appendReflect appends v, named name in errors.
func appendReflect(b []byte, v reflect.Value, name string) ([]byte, error) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return b, nil
		}
		return appendReflect(b, v.Elem(), name)
	case reflect.Bool:
		if v.Bool() {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case reflect.Int8, reflect.Uint8:
		return append(b, byte(v.Convert(reflect.TypeFor[uint64]()).Uint())), nil
	case reflect.Int16:
		return binary.LittleEndian.AppendUint16(b, uint16(v.Int())), nil
	case reflect.Uint16:
		return binary.LittleEndian.AppendUint16(b, uint16(v.Uint())), nil
	case reflect.Int32:
		return binary.LittleEndian.AppendUint32(b, uint32(v.Int())), nil
	case reflect.Uint32:
		return binary.LittleEndian.AppendUint32(b, uint32(v.Uint())), nil
	case reflect.Int, reflect.Int64:
		return binary.LittleEndian.AppendUint64(b, uint64(v.Int())), nil
	case reflect.Uint, reflect.Uint64:
		return binary.LittleEndian.AppendUint64(b, v.Uint()), nil
	case reflect.Float32:
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v.Float()))), nil
	case reflect.Float64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Float())), nil
	case reflect.String:
		return append(append(b, v.String()...), 0), nil
	case reflect.Slice, reflect.Array:
		n := v.Len()
		if err := tooLong(name, n); err != nil {
			return b, err
		}
		b = append(b, byte(n))
		elem := name + "[]"
		var err error
		for i := range n {
			if b, err = appendReflect(b, v.Index(i), elem); err != nil {
				return b, err
			}
		}
		return b, nil
	case reflect.Struct:
		if rv, ok := v.Interface().(resource.Value); ok {
			return appendValue(b, rv)
		}
		t := v.Type()
		var err error
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			field := f.Name
			if name != contentName {
				field = name + "." + f.Name
			}
			if b, err = appendReflect(b, v.Field(i), field); err != nil {
				return b, err
			}
		}
		return b, nil
	}
	return b, fmt.Errorf("%w: a %s", ErrUnencodable, v.Kind())
}
