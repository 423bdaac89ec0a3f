package resource

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Type is the type of a parameter value.
type Type uint8

// The value types. Integer and float types carry their width so that a value
// keeps the type its sender declared (the serial tool's --opdatatype). Record
// is a JSON object of a named record type (AdvSettings, LedState, ...); JSON is
// an untyped JSON value, as the phone bridge sends it, whose type the interface
// definition decides when the request is bound.
const (
	TypeInvalid Type = iota
	TypeNull
	TypeBool
	TypeInt8
	TypeInt16
	TypeInt32
	TypeInt64
	TypeUint8
	TypeUint16
	TypeUint32
	TypeUint64
	TypeFloat32
	TypeFloat64
	TypeString
	TypeRecord
	TypeJSON
)

var typeNames = [...]string{
	TypeInvalid: "invalid", TypeNull: "null", TypeBool: "bool",
	TypeInt8: "int8", TypeInt16: "int16", TypeInt32: "int32", TypeInt64: "int64",
	TypeUint8: "uint8", TypeUint16: "uint16", TypeUint32: "uint32", TypeUint64: "uint64",
	TypeFloat32: "float", TypeFloat64: "double", TypeString: "string",
	TypeRecord: "record", TypeJSON: "json",
}

// String returns the type's name as the serial tool spells it.
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// IsInt reports whether t is a signed or unsigned integer type.
func (t Type) IsInt() bool { return t >= TypeInt8 && t <= TypeUint64 }

// IsSigned reports whether t is a signed integer type.
func (t Type) IsSigned() bool { return t >= TypeInt8 && t <= TypeInt64 }

// IsFloat reports whether t is a floating-point type.
func (t Type) IsFloat() bool { return t == TypeFloat32 || t == TypeFloat64 }

// IntRange returns the smallest and largest value of an integer type.
func (t Type) IntRange() (lo int64, hi uint64) {
	switch t {
	case TypeInt8:
		return math.MinInt8, math.MaxInt8
	case TypeInt16:
		return math.MinInt16, math.MaxInt16
	case TypeInt32:
		return math.MinInt32, math.MaxInt32
	case TypeInt64:
		return math.MinInt64, math.MaxInt64
	case TypeUint8:
		return 0, math.MaxUint8
	case TypeUint16:
		return 0, math.MaxUint16
	case TypeUint32:
		return 0, math.MaxUint32
	case TypeUint64:
		return 0, math.MaxUint64
	}
	return 0, 0
}

// primitiveTypes are the type names a caller may give for a value, in the
// order the help texts list them.
var primitiveTypes = []Type{TypeInt64, TypeInt32, TypeUint8, TypeUint16, TypeUint32, TypeFloat32, TypeFloat64, TypeBool, TypeString}

// PrimitiveTypeNames lists the primitive type names ParseValue accepts.
func PrimitiveTypeNames() []string {
	names := make([]string, len(primitiveTypes))
	for i, t := range primitiveTypes {
		names[i] = t.String()
	}
	return names
}

// Value is one typed parameter value of a request. The zero Value is invalid.
type Value struct {
	typ  Type
	num  uint64 // integer bits (two's complement for signed), float64 bits, or bool
	str  string // string value, or JSON text of a Record or JSON value
	name string // record type name of a Record
}

// Null returns the null value.
func Null() Value { return Value{typ: TypeNull} }

// Bool returns a bool value.
func Bool(b bool) Value {
	v := Value{typ: TypeBool}
	if b {
		v.num = 1
	}
	return v
}

// Int64 returns an int64 value.
func Int64(i int64) Value { return Value{typ: TypeInt64, num: uint64(i)} }

// Int32 returns an int32 value.
func Int32(i int32) Value { return Value{typ: TypeInt32, num: uint64(int64(i))} }

// Uint8 returns a uint8 value.
func Uint8(u uint8) Value { return Value{typ: TypeUint8, num: uint64(u)} }

// Uint16 returns a uint16 value.
func Uint16(u uint16) Value { return Value{typ: TypeUint16, num: uint64(u)} }

// Uint32 returns a uint32 value.
func Uint32(u uint32) Value { return Value{typ: TypeUint32, num: uint64(u)} }

// Float returns a float (float32) value.
func Float(f float32) Value { return Value{typ: TypeFloat32, num: math.Float64bits(float64(f))} }

// Double returns a double (float64) value.
func Double(f float64) Value { return Value{typ: TypeFloat64, num: math.Float64bits(f)} }

// String returns a string value.
func String(s string) Value { return Value{typ: TypeString, str: s} }

// IntOf returns an integer value of type t holding i. It panics if t is not an
// integer type; range is not checked.
func IntOf(t Type, i int64) Value {
	if !t.IsInt() {
		panic("resource: IntOf with non-integer type " + t.String())
	}
	return Value{typ: t, num: uint64(i)}
}

// RecordJSON returns a record value of the named record type from its JSON
// text. The text must be a JSON object.
func RecordJSON(name string, text []byte) (Value, error) {
	text = bytes.TrimSpace(text)
	if len(text) == 0 || text[0] != '{' {
		return Value{}, fmt.Errorf("%s value is not a JSON object: %s", name, clip(string(text), 60))
	}
	var raw json.RawMessage
	if err := json.Unmarshal(text, &raw); err != nil {
		return Value{}, fmt.Errorf("%s value is not a JSON object (%v): %s", name, err, clip(string(text), 60))
	}
	return Value{typ: TypeRecord, str: string(text), name: name}, nil
}

// Record returns a record value of the named record type, encoding v as JSON.
func Record(name string, v any) (Value, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Value{}, fmt.Errorf("encode %s: %w", name, err)
	}
	return RecordJSON(name, b)
}

// JSON returns an untyped value from JSON text, as the phone bridge sends it.
func JSON(text []byte) (Value, error) {
	text = bytes.TrimSpace(text)
	if !json.Valid(text) {
		return Value{}, fmt.Errorf("value is not valid JSON: %s", clip(string(text), 60))
	}
	return Value{typ: TypeJSON, str: string(text)}, nil
}

// Type returns the value's type.
func (v Value) Type() Type { return v.typ }

// Name returns the record type name of a Record value, and "" otherwise.
func (v Value) Name() string { return v.name }

// Int returns an integer value as int64 (a uint64 above MaxInt64 wraps).
func (v Value) Int() int64 { return int64(v.num) }

// Uint returns an unsigned integer value (a negative signed value wraps).
func (v Value) Uint() uint64 { return v.num }

// Float returns a float value; integers convert.
func (v Value) Float() float64 {
	switch {
	case v.typ.IsFloat():
		return math.Float64frombits(v.num)
	case v.typ.IsSigned():
		return float64(int64(v.num))
	case v.typ.IsInt():
		return float64(v.num)
	}
	return 0
}

// Bool returns a bool value.
func (v Value) Bool() bool { return v.typ == TypeBool && v.num != 0 }

// Str returns a string value, or the JSON text of a Record or JSON value.
func (v Value) Str() string { return v.str }

// Decode decodes a Record or JSON value into dst with encoding/json.
func (v Value) Decode(dst any) error {
	if v.typ != TypeRecord && v.typ != TypeJSON {
		return fmt.Errorf("cannot decode a %s value as a record", v.typ)
	}
	return json.Unmarshal([]byte(v.str), dst)
}

// String formats the value for messages and canonical paths: integers in
// decimal, strings as they are, records as their JSON text.
func (v Value) String() string {
	switch {
	case v.typ.IsSigned():
		return strconv.FormatInt(int64(v.num), 10)
	case v.typ.IsInt():
		return strconv.FormatUint(v.num, 10)
	case v.typ == TypeFloat32:
		return strconv.FormatFloat(math.Float64frombits(v.num), 'g', -1, 32)
	case v.typ == TypeFloat64:
		return strconv.FormatFloat(math.Float64frombits(v.num), 'g', -1, 64)
	case v.typ == TypeBool:
		return strconv.FormatBool(v.num != 0)
	case v.typ == TypeNull:
		return "null"
	}
	return v.str
}

// AppendJSON appends the value as JSON.
func (v Value) AppendJSON(b []byte) []byte {
	switch {
	case v.typ.IsSigned():
		return strconv.AppendInt(b, int64(v.num), 10)
	case v.typ.IsInt():
		return strconv.AppendUint(b, v.num, 10)
	case v.typ == TypeFloat32:
		return appendFloat(b, math.Float64frombits(v.num), 32)
	case v.typ == TypeFloat64:
		return appendFloat(b, math.Float64frombits(v.num), 64)
	case v.typ == TypeBool:
		return strconv.AppendBool(b, v.num != 0)
	case v.typ == TypeString:
		return AppendString(b, v.str)
	case v.typ == TypeRecord || v.typ == TypeJSON:
		return append(b, v.str...)
	}
	return append(b, "null"...)
}

// Equal reports whether two values have the same type and content.
func (v Value) Equal(w Value) bool { return v == w }

// ParseValue parses the text form of a value of the named type, as the serial
// tool's --opdatatype/--opdata pairs give it. typ is a primitive type name
// (int64, int32, uint8, uint16, uint32, float, double, bool, string) or the
// name of a record type, whose text must then be a JSON object. Integers are
// decimal, or hexadecimal with a 0x prefix.
func ParseValue(typ, text string) (Value, error) {
	for _, t := range primitiveTypes {
		if typ == t.String() {
			return parsePrimitive(t, text)
		}
	}
	if !isIdentifier(typ) {
		return Value{}, fmt.Errorf("unknown type %q; allowed: %s, or a record name such as AdvSettings", typ, strings.Join(PrimitiveTypeNames(), ", "))
	}
	return RecordJSON(typ, []byte(text))
}

func parsePrimitive(t Type, text string) (Value, error) {
	switch {
	case t.IsInt():
		return ParseInt(t, text)
	case t.IsFloat():
		f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return Value{}, fmt.Errorf("%s value %q is not a finite number", t, clip(text, 40))
		}
		if t == TypeFloat32 {
			return Float(float32(f)), nil
		}
		return Double(f), nil
	case t == TypeBool:
		b, err := strconv.ParseBool(strings.TrimSpace(text))
		if err != nil {
			return Value{}, fmt.Errorf("bool value %q is not true or false", clip(text, 40))
		}
		return Bool(b), nil
	}
	if !utf8.ValidString(text) {
		return Value{}, fmt.Errorf("string value is not valid UTF-8")
	}
	return String(text), nil
}

// ParseInt parses an integer of type t from decimal text, or hexadecimal with a
// 0x prefix, and checks that it fits the type. Its errors match
// strconv.ErrSyntax (not an integer) or strconv.ErrRange (does not fit t)
// with errors.Is.
func ParseInt(t Type, text string) (Value, error) {
	s := strings.TrimSpace(text)
	base := 10
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	if len(digits) > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X') {
		base, digits = 16, digits[2:]
	}
	lo, hi := t.IntRange()
	outOfRange := &numError{msg: fmt.Sprintf("%s value %s out of range %d..%d", t, clip(s, 40), lo, hi), err: strconv.ErrRange}
	u, err := strconv.ParseUint(digits, base, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return Value{}, outOfRange
		}
		return Value{}, &numError{msg: fmt.Sprintf("%s value %q is not an integer", t, clip(text, 40)), err: strconv.ErrSyntax}
	}
	if neg {
		if u == 0 {
			return Value{typ: t}, nil
		}
		if !t.IsSigned() || u-1 > uint64(-(lo+1)) {
			return Value{}, outOfRange
		}
		return Value{typ: t, num: uint64(-int64(u-1) - 1)}, nil
	}
	if u > hi {
		return Value{}, outOfRange
	}
	return Value{typ: t, num: u}, nil
}

// numError is a message for people that matches a strconv sentinel.
type numError struct {
	msg string
	err error
}

func (e *numError) Error() string { return e.msg }
func (e *numError) Unwrap() error { return e.err }

func isIdentifier(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case i > 0 && (r >= '0' && r <= '9' || r == '_'):
		default:
			return false
		}
	}
	return true
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
