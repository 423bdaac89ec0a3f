package content

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"senseboard/sensor"
)

// ErrJSON is JSON that is not a notification of the type it is decoded
// into: bad syntax, a member of the wrong kind, or a number out of its
// range.
var ErrJSON = errors.New("not the JSON of the notification")

// The notifications' DecodeJSON methods read the JSON that AppendJSON
// writes, as a client of the device receives it, without reflection and,
// once the notification has room, without allocating: a load that counts
// the samples of thousands of streams decodes every notification. They
// accept what encoding/json accepts into the same type, with its results
// (member names matched without regard to case, unknown members skipped,
// null members left zero), except null where an object or an array
// element is wanted and member names with escapes, which they refuse.
// What is absent from the JSON is zero afterwards; the arrays reuse the
// notification's room.

// DecodeJSON sets m from its JSON form.
func (m *MotionData) DecodeJSON(b []byte) error {
	acc, gyro, magn := m.ArrayAcc, m.ArrayGyro, m.ArrayMagn
	*m = MotionData{}
	r := jsonReader{b: b}
	err := r.object("MotionData", func(key []byte) error {
		var err error
		switch {
		case named(key, "Timestamp"):
			m.Timestamp, err = r.uint32(m.Timestamp)
		case named(key, "ArrayAcc"):
			m.ArrayAcc, err = r.xyzs(acc)
		case named(key, "ArrayGyro"):
			m.ArrayGyro, err = r.xyzs(gyro)
		case named(key, "ArrayMagn"):
			m.ArrayMagn, err = r.xyzs(magn)
		default:
			err = r.skip()
		}
		return err
	})
	return r.end(err)
}

// DecodeJSON sets e from its JSON form.
func (e *ECGData) DecodeJSON(b []byte) error {
	samples := e.Samples
	if samples == nil {
		samples = e.store[:0]
	}
	e.Samples, e.Timestamp = nil, 0
	r := jsonReader{b: b}
	err := r.object("ECGData", func(key []byte) error {
		var err error
		switch {
		case named(key, "Samples"):
			e.Samples, err = readArray(&r, samples, r.int32)
		case named(key, "Timestamp"):
			e.Timestamp, err = r.uint32(e.Timestamp)
		default:
			err = r.skip()
		}
		return err
	})
	return r.end(err)
}

// DecodeJSON sets e from its JSON form.
func (e *ECGDataMV) DecodeJSON(b []byte) error {
	samples := e.Samples
	if samples == nil {
		samples = e.store[:0]
	}
	e.Samples, e.Timestamp = nil, 0
	r := jsonReader{b: b}
	err := r.object("ECGDataMV", func(key []byte) error {
		var err error
		switch {
		case named(key, "Samples"):
			e.Samples, err = readArray(&r, samples, r.float32)
		case named(key, "Timestamp"):
			e.Timestamp, err = r.uint32(e.Timestamp)
		default:
			err = r.skip()
		}
		return err
	})
	return r.end(err)
}

// DecodeJSON sets h from its JSON form.
func (h *HRData) DecodeJSON(b []byte) error {
	rr := h.RRData
	if rr == nil {
		rr = h.rr[:0]
	}
	h.Average, h.RRData = 0, nil
	r := jsonReader{b: b}
	err := r.object("HRData", func(key []byte) error {
		var err error
		switch {
		case named(key, "average"):
			h.Average, err = r.float32(h.Average)
		case named(key, "rrData"):
			h.RRData, err = readArray(&r, rr, r.uint16)
		default:
			err = r.skip()
		}
		return err
	})
	return r.end(err)
}

// DecodeJSON sets t from its JSON form.
func (t *TempData) DecodeJSON(b []byte) error {
	*t = TempData{}
	r := jsonReader{b: b}
	err := r.object("TempData", func(key []byte) error {
		var err error
		switch {
		case named(key, "Timestamp"):
			t.Timestamp, err = r.uint32(t.Timestamp)
		case named(key, "Measurement"):
			t.Measurement, err = r.float32(t.Measurement)
		default:
			err = r.skip()
		}
		return err
	})
	return r.end(err)
}

// named reports whether a member's name is name, without regard to case.
func named(key []byte, name string) bool {
	return string(key) == name || bytes.EqualFold(key, []byte(name))
}

// maxDepth is how deep values nest at most, as in encoding/json.
const maxDepth = 10000

// jsonReader reads one JSON value from b, from i on.
type jsonReader struct {
	b     []byte
	i     int
	depth int
}

// ws skips white space.
func (r *jsonReader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// eat consumes c when it comes next, after white space.
func (r *jsonReader) eat(c byte) bool {
	r.ws()
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

// fail says what was wanted where the input has something else.
func (r *jsonReader) fail(want string) error {
	if r.i >= len(r.b) {
		return fmt.Errorf("%w: the input ends where %s is wanted", ErrJSON, want)
	}
	return fmt.Errorf("%w: at byte %d, %q where %s is wanted", ErrJSON, r.i, r.b[r.i], want)
}

// end checks that nothing but white space follows the value.
func (r *jsonReader) end(err error) error {
	if err != nil {
		return err
	}
	if r.ws(); r.i < len(r.b) {
		return r.fail("the end of the input")
	}
	return nil
}

// object reads an object named what, calling member with each member's
// name and the reader at its value, which member reads.
func (r *jsonReader) object(what string, member func(key []byte) error) error {
	if !r.eat('{') {
		return r.fail("the { of " + what)
	}
	if r.depth++; r.depth > maxDepth {
		return fmt.Errorf("%w: values nest deeper than %d", ErrJSON, maxDepth)
	}
	if r.eat('}') {
		r.depth--
		return nil
	}
	for {
		key, err := r.key()
		if err != nil {
			return err
		}
		if !r.eat(':') {
			return r.fail("the : after a member name of " + what)
		}
		if err := member(key); err != nil {
			return err
		}
		if r.eat(',') {
			continue
		}
		if r.eat('}') {
			r.depth--
			return nil
		}
		return r.fail(", or } in " + what)
	}
}

// key reads a member name, which must have no escapes.
func (r *jsonReader) key() ([]byte, error) {
	if !r.eat('"') {
		return nil, r.fail("a member name")
	}
	start := r.i
	for ; r.i < len(r.b); r.i++ {
		switch c := r.b[r.i]; {
		case c == '"':
			r.i++
			return r.b[start : r.i-1], nil
		case c == '\\':
			return nil, r.fail("a member name without escapes")
		case c < 0x20:
			return nil, r.fail("a character of a member name")
		}
	}
	return nil, r.fail(`the " that ends a member name`)
}

// null consumes null when it comes next.
func (r *jsonReader) null() bool {
	r.ws()
	if bytes.HasPrefix(r.b[r.i:], []byte("null")) {
		r.i += 4
		return true
	}
	return false
}

// number reads a number as JSON spells it.
func (r *jsonReader) number() ([]byte, error) {
	r.ws()
	start, b := r.i, r.b
	i := r.i
	digits := func() bool {
		n := 0
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
			n++
		}
		return n > 0
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		r.i = i
		return nil, r.fail("a number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			r.i = i
			return nil, r.fail("a digit after the decimal point")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			r.i = i
			return nil, r.fail("a digit of the exponent")
		}
	}
	r.i = i
	return b[start:i], nil
}

// scalar reads a number, or null; it reports null with n nil.
func (r *jsonReader) scalar() (n []byte, err error) {
	if r.null() {
		return nil, nil
	}
	return r.number()
}

// notA is the error of the number n that is not a what.
func notA(n []byte, what string) error {
	return fmt.Errorf("%w: %s is not %s", ErrJSON, n, what)
}

// uint32 reads an unsigned 32-bit integer; null leaves v.
func (r *jsonReader) uint32(v uint32) (uint32, error) {
	n, err := r.scalar()
	if n == nil {
		return v, err
	}
	u, err := strconv.ParseUint(string(n), 10, 32)
	if err != nil {
		return 0, notA(n, "a uint32")
	}
	return uint32(u), nil
}

// uint16 reads an unsigned 16-bit integer; null leaves v.
func (r *jsonReader) uint16(v uint16) (uint16, error) {
	n, err := r.scalar()
	if n == nil {
		return v, err
	}
	u, err := strconv.ParseUint(string(n), 10, 16)
	if err != nil {
		return 0, notA(n, "a uint16")
	}
	return uint16(u), nil
}

// int32 reads a signed 32-bit integer; null leaves v.
func (r *jsonReader) int32(v int32) (int32, error) {
	n, err := r.scalar()
	if n == nil {
		return v, err
	}
	i, err := strconv.ParseInt(string(n), 10, 32)
	if err != nil {
		return 0, notA(n, "an int32")
	}
	return int32(i), nil
}

// float32 reads a 32-bit float; null leaves v.
func (r *jsonReader) float32(v float32) (float32, error) {
	n, err := r.scalar()
	if n == nil {
		return v, err
	}
	if f, ok := exactFloat32(n); ok {
		return f, nil
	}
	f, err := strconv.ParseFloat(string(n), 32)
	if err != nil {
		return 0, notA(n, "a float32")
	}
	return float32(f), nil
}

// float32Pow10 are the powers of ten that a float32 holds exactly.
var float32Pow10 = [...]float32{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10}

// exactFloat32 converts the JSON number n (checked by number) in float32
// arithmetic when that is exact: when its digits make a mantissa below
// 2^23 and its power of ten is at most 10 either way. strconv.ParseFloat
// takes the same way first, so the result is its own. Most samples of the
// motion streams (-0.981057, 0.07, but not -9.810573) go this way; the
// others report false.
func exactFloat32(n []byte) (float32, bool) {
	var mant uint32
	exp, i, neg := 0, 0, false
	if n[0] == '-' {
		neg, i = true, 1
	}
	frac := false
	for ; i < len(n); i++ {
		c := n[i]
		switch {
		case c == '.':
			frac = true
			continue
		case c == 'e' || c == 'E':
			e, err := strconv.Atoi(string(n[i+1:]))
			if err != nil || e > 10 || e < -10 {
				return 0, false
			}
			exp += e
			i = len(n)
			continue
		}
		if mant = mant*10 + uint32(c-'0'); mant >= 1<<23 {
			return 0, false
		}
		if frac {
			exp--
		}
	}
	f := float32(mant)
	switch {
	case exp == 0:
	case 0 < exp && exp <= 10:
		f *= float32Pow10[exp]
	case -10 <= exp && exp < 0:
		f /= float32Pow10[-exp]
	default:
		return 0, false
	}
	if neg {
		f = -f
	}
	return f, true
}

// readArray reads an array of numbers into dst's room, each element with
// elem; null gives nil. An element may not be null.
func readArray[T any](r *jsonReader, dst []T, elem func(T) (T, error)) ([]T, error) {
	if r.null() {
		return nil, nil
	}
	if !r.eat('[') {
		return nil, r.fail("an array")
	}
	dst = dst[:0]
	if dst == nil {
		dst = []T{}
	}
	if r.eat(']') {
		return dst, nil
	}
	for {
		if r.null() {
			return nil, r.fail("an element other than null")
		}
		var zero T
		v, err := elem(zero)
		if err != nil {
			return nil, err
		}
		dst = append(dst, v)
		if r.eat(',') {
			continue
		}
		if r.eat(']') {
			return dst, nil
		}
		return nil, r.fail(", or ] in an array")
	}
}

// xyzs reads an array of samples {"x":..,"y":..,"z":..} into dst's room;
// null gives nil.
func (r *jsonReader) xyzs(dst []sensor.XYZ) ([]sensor.XYZ, error) {
	return readArray(r, dst, func(sensor.XYZ) (sensor.XYZ, error) {
		var v sensor.XYZ
		err := r.object("a sample", func(key []byte) error {
			var err error
			switch {
			case named(key, "x"):
				v.X, err = r.float32(v.X)
			case named(key, "y"):
				v.Y, err = r.float32(v.Y)
			case named(key, "z"):
				v.Z, err = r.float32(v.Z)
			default:
				err = r.skip()
			}
			return err
		})
		return v, err
	})
}

// skip reads any value and leaves it.
func (r *jsonReader) skip() error {
	r.ws()
	if r.i >= len(r.b) {
		return r.fail("a value")
	}
	switch c := r.b[r.i]; {
	case c == '{':
		return r.object("an object", func([]byte) error { return r.skip() })
	case c == '[':
		r.i++
		if r.depth++; r.depth > maxDepth {
			return fmt.Errorf("%w: values nest deeper than %d", ErrJSON, maxDepth)
		}
		defer func() { r.depth-- }()
		if r.eat(']') {
			return nil
		}
		for {
			if err := r.skip(); err != nil {
				return err
			}
			if r.eat(',') {
				continue
			}
			if r.eat(']') {
				return nil
			}
			return r.fail(", or ] in an array")
		}
	case c == '"':
		return r.skipString()
	case c == '-' || '0' <= c && c <= '9':
		_, err := r.number()
		return err
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(r.b[r.i:], []byte(lit)) {
			r.i += len(lit)
			return nil
		}
	}
	return r.fail("a value")
}

// skipString reads a string and leaves it.
func (r *jsonReader) skipString() error {
	r.i++ // the opening quote
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			return nil
		case c < 0x20:
			return r.fail("a character of a string")
		case c == '\\':
			r.i++
			if r.i >= len(r.b) {
				return r.fail("an escape")
			}
			switch r.b[r.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				r.i++
			case 'u':
				r.i++
				for range 4 {
					if r.i >= len(r.b) || !isHex(r.b[r.i]) {
						return r.fail("a hexadecimal digit of an escape")
					}
					r.i++
				}
			default:
				return r.fail("an escape")
			}
		default:
			r.i++
		}
	}
	return r.fail(`the " that ends a string`)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// A Decoder is a notification that reads its JSON form into itself.
type Decoder interface {
	DecodeJSON(b []byte) error
}

// ForPath returns an empty notification of the measurement stream that
// path subscribes to, to decode that stream's notifications into: a
// *MotionData for /Meas/Acc, Gyro, Magn, IMU6, IMU6m and IMU9 at a rate, an
// *ECGData for /Meas/ECG at a rate, an *ECGDataMV for /Meas/ECG/{rate}/mV,
// an *HRData for /Meas/HR and a *TempData for /Meas/Temp; nil for other
// paths. Names match without regard to case, as the device's paths do.
func ForPath(path string) Decoder {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) < 2 || !strings.EqualFold(parts[0], "Meas") {
		return nil
	}
	stream, rest := strings.ToLower(parts[1]), parts[2:]
	switch {
	case len(rest) == 0 && stream == "hr":
		return new(HRData)
	case len(rest) == 0 && stream == "temp":
		return new(TempData)
	case len(rest) == 0:
		return nil
	case stream == "ecg" && len(rest) == 2 && strings.EqualFold(rest[1], "mV"):
		return new(ECGDataMV)
	case len(rest) > 1:
		return nil
	case stream == "ecg":
		return new(ECGData)
	case stream == "acc", stream == "gyro", stream == "magn", stream == "imu6", stream == "imu6m", stream == "imu9":
		return new(MotionData)
	}
	return nil
}
