package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"senseboard/resource"
)

// checkText refuses a JSON body with a string that is not UTF-8 text (a
// byte that is not UTF-8, or a \u escape of half a surrogate pair), naming
// the field: encoding/json would decode it with U+FFFD in place, and a
// path, a serial or a name would then name something else. Text that is
// not JSON is left to the decoder to refuse.
func checkText(b []byte) error {
	if resource.CheckJSONText(b) == nil {
		return nil
	}
	type level struct {
		object  bool
		wantKey bool // the next string of the object is a key
		key     string
		index   int
	}
	var stack []level
	// name says where the value at the top of the levels is.
	name := func(levels []level) string {
		var n []byte
		for _, l := range levels {
			switch {
			case l.object && len(n) == 0:
				n = append(n, l.key...)
			case l.object:
				n = append(append(n, '.'), l.key...)
			default:
				n = strconv.AppendInt(append(n, '['), int64(l.index), 10)
				n = append(n, ']')
			}
		}
		if len(n) == 0 {
			return "the body"
		}
		return strconv.Quote(string(n))
	}
	// valueDone moves the enclosing level past a value.
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		if top := &stack[len(stack)-1]; top.object {
			top.wantKey = true
		} else {
			top.index++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, level{object: true, wantKey: true})
			case '[':
				stack = append(stack, level{})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
			continue
		case string:
			raw := b[start:dec.InputOffset()]
			raw = raw[bytes.IndexByte(raw, '"'):] // after the separators before it
			key := len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].wantKey
			if err := stringText(raw); err != nil {
				if key {
					return fmt.Errorf("%w: a field name in %s is not valid UTF-8: %v", ErrBadMessage, name(stack[:len(stack)-1]), err)
				}
				return fmt.Errorf("%w: %s is not valid UTF-8: %v", ErrBadMessage, name(stack), err)
			}
			if key {
				top := &stack[len(stack)-1]
				top.key, top.wantKey = t, false
				continue
			}
		}
		valueDone()
	}
}

// stringText says what in a JSON string, quotes and all, is not UTF-8
// text, with its byte counted from the start of the string's content.
func stringText(raw []byte) error {
	s := raw[1 : len(raw)-1]
	if !utf8.Valid(s) {
		i := 0
		for {
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			i += size
		}
		return fmt.Errorf("its byte %d is 0x%02x; text is UTF-8", i, s[i])
	}
	if err := resource.CheckJSONText(s); err != nil {
		return fmt.Errorf("%v; text is UTF-8", err)
	}
	return nil
}
