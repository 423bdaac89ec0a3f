package wire

import (
	"encoding/binary"
	"hash/crc32"
)

// refDecoder is the decoder as it was before it ran in linear time: it
// checks each candidate frame over its own bytes and rescans what follows a
// broken one's magic. Its work grows with the length that broken headers
// claim, but it is plainly right, so the fuzz target checks that Decoder
// finds the same frames and counts the same broken ones.
type refDecoder struct {
	buf []byte // the candidate frame, from its magic
	max int

	// Skipped counts bytes dropped while looking for frames.
	Skipped uint64
	// Broken counts candidate frames dropped: bad checksum, unknown version,
	// oversized length.
	Broken uint64
	// Oversized is the header of the last frame dropped for its length, so
	// that the receiver can tell the sender; ok is false when there is none.
	Oversized struct {
		Kind   Kind
		ID     uint32
		Length uint32
		OK     bool
	}
}

// NewDecoder returns a decoder accepting payloads up to max bytes
// (MaxPayload when max <= 0).
func newRefDecoder(max int) *refDecoder {
	if max <= 0 {
		max = MaxPayload
	}
	return &refDecoder{max: max}
}

// Feed decodes p and calls emit for every complete, valid frame, in order.
// The frame's payload is valid only during emit.
func (d *refDecoder) Feed(p []byte, emit func(Frame)) {
	// rescans of broken candidates come before the rest of p
	var todo [][]byte
	for {
		if len(p) == 0 {
			if len(todo) == 0 {
				return
			}
			p, todo = todo[len(todo)-1], todo[:len(todo)-1]
			continue
		}
		if len(d.buf) == 0 {
			// look for the first magic byte
			i := 0
			for i < len(p) && p[i] != Magic0 {
				i++
			}
			d.Skipped += uint64(i)
			p = p[i:]
			if len(p) == 0 {
				continue
			}
		}
		need := d.need()
		take := min(need-len(d.buf), len(p))
		d.buf = append(d.buf, p[:take]...)
		p = p[take:]
		if len(d.buf) < need {
			continue // p is used up; the candidate waits for more bytes
		}
		switch d.check() {
		case ok:
			if len(d.buf) >= HeaderSize && len(d.buf) == HeaderSize+int(d.length())+TrailSize {
				emit(Frame{Version: d.buf[2], Kind: Kind(d.buf[3]), ID: binary.LittleEndian.Uint32(d.buf[4:]),
					Payload: d.buf[HeaderSize : len(d.buf)-TrailSize]})
				d.buf = d.buf[:0]
			}
		case bad:
			// drop the magic byte and rescan what follows it, before p
			todo = append(todo, p)
			p = append([]byte(nil), d.buf[1:]...)
			d.buf = d.buf[:0]
			d.Skipped++
		}
	}
}

type verdict uint8

const (
	ok verdict = iota
	bad
)

// need returns how many bytes the candidate must have for the next check.
func (d *refDecoder) need() int {
	switch {
	case len(d.buf) < 2:
		return 2
	case len(d.buf) < HeaderSize:
		return HeaderSize
	}
	return HeaderSize + int(d.length()) + TrailSize
}

func (d *refDecoder) length() uint32 { return binary.LittleEndian.Uint32(d.buf[8:]) }

// check validates the candidate as far as it goes.
func (d *refDecoder) check() verdict {
	if d.buf[0] != Magic0 || len(d.buf) >= 2 && d.buf[1] != Magic1 {
		return bad
	}
	if len(d.buf) < HeaderSize {
		return ok
	}
	if d.buf[2] != Version {
		d.Broken++
		return bad
	}
	if n := d.length(); n > uint32(d.max) {
		d.Broken++
		d.Oversized.Kind, d.Oversized.ID, d.Oversized.Length, d.Oversized.OK = Kind(d.buf[3]), binary.LittleEndian.Uint32(d.buf[4:]), n, true
		return bad
	}
	if len(d.buf) < HeaderSize+int(d.length())+TrailSize {
		return ok
	}
	end := len(d.buf) - TrailSize
	if crc32.Checksum(d.buf[2:end], castagnoli) != binary.LittleEndian.Uint32(d.buf[end:]) {
		d.Broken++
		return bad
	}
	return ok
}
