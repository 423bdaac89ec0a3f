package resource

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// JSONAppender is implemented by content types that encode themselves as JSON
// without allocating, for the streams whose encoding is on the hot path. The
// output must be what encoding/json would produce for the same value.
type JSONAppender interface {
	AppendJSON(b []byte) []byte
}

// AppendJSON appends the JSON encoding of v to b: with v's own AppendJSON when
// it has one, and with encoding/json otherwise.
func AppendJSON(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case JSONAppender:
		return v.AppendJSON(b), nil
	case string:
		return AppendString(b, v), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint8:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case json.RawMessage:
		return append(b, v...), nil
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return b, fmt.Errorf("encode %T: %w", v, err)
	}
	return append(b, enc...), nil
}

// AppendFloat32 appends f as encoding/json encodes a float32.
func AppendFloat32(b []byte, f float32) []byte { return appendFloat(b, float64(f), 32) }

// AppendFloat64 appends f as encoding/json encodes a float64.
func AppendFloat64(b []byte, f float64) []byte { return appendFloat(b, f, 64) }

// appendFloat follows encoding/json's float encoder so that both give the same
// bytes: shortest representation, exponent form outside [1e-6, 1e21). NaN and
// infinities, which JSON cannot carry, are written as null.
func appendFloat(b []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9 (the exponent form is at least 5 bytes, 1e-07)
		n := len(b)
		if b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, escaped as encoding/json escapes it
// (including <, > and &, and invalid UTF-8 replaced by U+FFFD).
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// CheckJSONText reports JSON text that encoding/json would change without a
// word: bytes that are not UTF-8, and \u escapes of half a surrogate pair,
// which both decode as U+FFFD. A request that has them is refused instead.
func CheckJSONText(b []byte) error {
	if !utf8.Valid(b) {
		i := 0
		for i < len(b) {
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			i += size
		}
		return fmt.Errorf("byte %d (0x%02x) is not UTF-8; text must be UTF-8", i, b[i])
	}
	for i := 0; i+1 < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		i++ // the escaped character: a backslash escapes nothing after it
		r, ok := hex4(b[i:])
		if !ok || !utf16.IsSurrogate(r) {
			continue
		}
		if j := i + 5; r < 0xDC00 && j < len(b) && b[j] == '\\' { // a high half: the low half must follow
			if low, ok := hex4(b[j+1:]); ok && low >= 0xDC00 && utf16.IsSurrogate(low) {
				i = j + 5
				continue
			}
		}
		return fmt.Errorf("the escape \\u%04X at byte %d is half of a surrogate pair, not a character", r, i-1)
	}
	return nil
}

// hex4 reads the rune of "uXXXX" at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 5 || b[0] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[1:5]), 16, 16)
	return rune(n), err == nil
}

// CheckObjectKeys reports a key of the JSON object b that is not one of
// allowed, spelled exactly so (encoding/json matches keys without regard to
// case and ignores the others), or that is given twice (encoding/json keeps
// the last). Text that is not a JSON object is left to the decoder to refuse.
func CheckObjectKeys(b []byte, allowed ...string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var seen []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		k, _ := t.(string)
		switch {
		case !slices.Contains(allowed, k):
			return fmt.Errorf("unknown field %q; allowed: %s", k, strings.Join(allowed, ", "))
		case slices.Contains(seen, k):
			return fmt.Errorf("field %q given twice", k)
		}
		seen = append(seen, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}

// CheckJSON is CheckJSONText that also refuses a key given twice in any
// object of the text (encoding/json keeps the last without a word). Text
// that is not JSON is left to the decoder to refuse.
func CheckJSON(b []byte) error {
	if err := CheckJSONText(b); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	type level struct {
		object bool
		key    bool // the next token in the object is a key
		seen   map[string]bool
	}
	var stack []level
	for {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		if n := len(stack); n > 0 && stack[n-1].object {
			top := &stack[n-1]
			if top.key {
				if k, ok := t.(string); ok {
					if top.seen[k] {
						return fmt.Errorf("field %q given twice", k)
					}
					top.seen[k] = true
					top.key = false
					continue
				}
			} else {
				top.key = true // t is the value (or opens it)
			}
		}
		switch t {
		case json.Delim('{'):
			stack = append(stack, level{object: true, key: true, seen: map[string]bool{}})
		case json.Delim('['):
			stack = append(stack, level{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}
