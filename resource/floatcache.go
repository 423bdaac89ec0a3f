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

const floatCacheSize = 4096 // a power of two; 64 KiB of entries

// floatEntry is one remembered encoding; n == 0 marks an empty entry, as no
// encoding is empty.
type floatEntry struct {
	bits uint32
	n    uint8
	text [11]byte
}

// Append appends f as AppendFloat32 does.
func (c *Float32Cache) Append(b []byte, f float32) []byte {
	bits := math.Float32bits(f)
	e := &c.entries[(bits^bits>>15)*2654435761>>8&(floatCacheSize-1)]
	if e.n != 0 && e.bits == bits {
		return append(b, e.text[:e.n]...)
	}
	start := len(b)
	b = AppendFloat32(b, f)
	if n := len(b) - start; n <= len(e.text) {
		e.bits, e.n = bits, uint8(n)
		copy(e.text[:], b[start:])
	}
	return b
}
