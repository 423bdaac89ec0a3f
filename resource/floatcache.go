package resource

import "math"

// Float32Cache remembers the JSON encodings of recently encoded float32
// values. Streams of quantized sensor samples repeat values often, and a
// lookup costs a fraction of formatting a float. It gives AppendFloat32's
// bytes. The zero value is ready to use; a cache is not safe for concurrent
// use.
type Float32Cache struct {
	entries [floatCacheSize]floatEntry
}

const floatCacheSize = 4096 // a power of two; 96 KiB of entries

// floatEntry is one remembered encoding; n == 0 marks an empty entry, as no
// encoding is empty. Its text holds every encoding of a value below 1e10 in
// magnitude (at most 17 bytes, such as -0.0000012345678): sensor values
// near zero have the longest.
type floatEntry struct {
	bits uint32
	n    uint8
	text [19]byte
}

// Append appends f as AppendFloat32 does.
func (c *Float32Cache) Append(b []byte, f float32) []byte {
	bits := math.Float32bits(f)
	e := &c.entries[(bits^bits>>15)*2654435761>>8&(floatCacheSize-1)]
	if e.n != 0 && e.bits == bits {
		return append(b, e.text[:e.n]...)
	}
	return e.fill(b, f, bits)
}

// fill appends f, formatted, and remembers its encoding in e when it fits.
func (e *floatEntry) fill(b []byte, f float32, bits uint32) []byte {
	start := len(b)
	b = AppendFloat32(b, f)
	if n := len(b) - start; n <= len(e.text) {
		e.bits, e.n = bits, uint8(n)
		copy(e.text[:], b[start:])
	}
	return b
}
