package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"
)

// Decoder finds frames in a byte stream. Feed it bytes as they arrive, in
// pieces of any size; it keeps its state between calls. Bytes that are not
// part of a valid frame are skipped: after a bad checksum, an unknown
// version or a length over the maximum, decoding resumes at the byte after
// the broken frame's magic, so a valid frame that follows garbage or a
// truncated frame is still found.
//
// The work is linear in the input, whatever it holds. Every magic byte may
// start a frame, and the frames that headers claim may overlap, so checking
// each candidate's checksum over its own bytes could cost the claimed length
// per byte of input. Instead the decoder runs one checksum over the whole
// stream and keeps its state at the start of each candidate; the checksum
// of a candidate's bytes then follows from the states at its two ends (a
// CRC is linear), with one fixed-size multiplication. Candidates are decided
// in the order they start, as a decoder that rescans after each broken frame
// would decide them.
type Decoder struct {
	max int

	win []byte // the stream from offset off on: every byte not yet decided
	off uint64 // the stream offset of win[0]

	base  uint64 // the first byte not yet decided: part of a frame or skipped
	look  uint64 // where the search for the next magic byte goes on
	crcAt uint64 // how far the running checksum has come
	crc   uint32 // the CRC-32C register over the stream up to crcAt, from zero

	pend  []pending   // magic pairs whose header has not all arrived, in order
	cands []candidate // candidates with a good header, by start, from c0 on
	c0    int         // the first candidate not yet decided
	seq   uint64      // the number of cands[0]
	ends  endHeap     // where candidates end, for the running checksum to stop

	work uint64 // bytes examined, for tests to check that work stays linear

	// turns counts the turns of the decoder's loops; once it passes
	// maxTurns, when that is not 0, Feed panics. Tests set maxTurns so
	// that a loop that does not end fails them instead of hanging them.
	turns, maxTurns uint64

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

// pending is a magic pair whose header is incomplete, with the running
// checksum's state after the pair.
type pending struct {
	start uint64
	crc   uint32
}

// candidate is a frame whose header is good: magic, version, a length
// within the maximum.
type candidate struct {
	start  uint64 // offset of the magic
	end    uint64 // offset of the checksum
	crc    uint32 // the running checksum's state at start+2
	crcEnd uint32 // its state at end, once ended is set
	ended  bool
}

// NewDecoder returns a decoder accepting payloads up to max bytes
// (MaxPayload when max <= 0).
func NewDecoder(max int) *Decoder {
	if max <= 0 {
		max = MaxPayload
	}
	return &Decoder{max: max}
}

// Feed decodes p and calls emit for every complete, valid frame, in order.
// The frame's payload is valid only during emit.
func (d *Decoder) Feed(p []byte, emit func(Frame)) {
	if len(p) == 0 {
		return
	}
	d.compact()
	d.win = append(d.win, p...)
	d.work += uint64(len(p))
	d.headers()
	for {
		d.turn()
		d.fast(emit)
		d.advance()
		if !d.decide(emit) {
			return
		}
	}
}

// fast decodes whole valid frames at the start of what is undecided, as
// long as nothing else waits: no candidate, no header, and the running
// checksum not beyond the start. It checks each frame over its own bytes and starts
// the running checksum again after it. When a frame there is incomplete or
// broken, the general way takes over from the same place; the running
// checksum then passes the bytes that fast read, so fast does not read
// them again, and no byte is read by fast twice.
func (d *Decoder) fast(emit func(Frame)) {
	for d.c0 == len(d.cands) && len(d.pend) == 0 && d.crcAt <= d.base {
		d.turn()
		w := d.at(d.base)
		i := bytes.IndexByte(w, Magic0)
		if i < 0 {
			i = len(w)
		}
		d.work += uint64(min(i+1, len(w)))
		d.Skipped += uint64(i)
		d.restart(d.base + uint64(i))
		w = w[i:]
		if len(w) < HeaderSize || w[1] != Magic1 || w[2] != Version {
			return
		}
		n := binary.LittleEndian.Uint32(w[8:])
		if n > uint32(d.max) || len(w) < HeaderSize+int(n)+TrailSize {
			return
		}
		d.work += HeaderSize + uint64(n) + TrailSize
		end := HeaderSize + int(n)
		if crc32.Checksum(w[2:end], castagnoli) != binary.LittleEndian.Uint32(w[end:]) {
			return
		}
		d.restart(d.base + uint64(end+TrailSize))
		emit(Frame{Version: w[2], Kind: Kind(w[3]), ID: binary.LittleEndian.Uint32(w[4:]), Payload: w[HeaderSize:end]})
	}
}

// turn counts a turn of a loop, and panics past maxTurns.
func (d *Decoder) turn() {
	d.turns++
	if d.maxTurns != 0 && d.turns > d.maxTurns {
		panic(fmt.Sprintf("wire: the decoder's loops turned more than %d times", d.maxTurns))
	}
}

// restart moves the undecided start to o and starts the running checksum
// there, which is right only while no candidate or header waits.
func (d *Decoder) restart(o uint64) {
	d.base, d.look, d.crcAt, d.crc = o, o, o, 0
	d.ends = d.ends[:0]
}

// end returns the offset just after the last byte received.
func (d *Decoder) end() uint64 { return d.off + uint64(len(d.win)) }

// at returns the received bytes from stream offset o on.
func (d *Decoder) at(o uint64) []byte { return d.win[o-d.off:] }

// compact drops the decided bytes. It copies the undecided ones to the
// front only when at least as many are dropped, so each byte is copied a
// bounded number of times; a buffer left large by a long frame shrinks.
func (d *Decoder) compact() {
	drop := int(d.base - d.off)
	keep := len(d.win) - drop
	switch {
	case drop == 0:
		return
	case cap(d.win) > 4*max(keep, 8192):
		d.win = append(make([]byte, 0, max(keep, 512)), d.win[drop:]...)
	case drop >= keep:
		d.win = d.win[:copy(d.win, d.win[drop:])]
	default:
		return
	}
	d.work += uint64(keep)
	d.off = d.base
}

// headers checks the pending headers that have all arrived, in order.
func (d *Decoder) headers() {
	n := 0
	for _, p := range d.pend {
		d.turn()
		if p.start+HeaderSize > d.end() {
			break
		}
		d.header(p)
		n++
	}
	d.pend = d.pend[:copy(d.pend, d.pend[n:])]
}

// header checks the header of a magic pair whose header has arrived and
// keeps it as a candidate when it is good.
func (d *Decoder) header(p pending) {
	if p.start < d.base {
		return // inside a frame already decided
	}
	h := d.at(p.start)[:HeaderSize]
	d.work += HeaderSize
	n := binary.LittleEndian.Uint32(h[8:])
	if h[2] != Version || n > uint32(d.max) {
		return // decide counts it when its turn comes
	}
	c := candidate{start: p.start, end: p.start + HeaderSize + uint64(n), crc: p.crc}
	d.ends.push(endRef{c.end, d.seq + uint64(len(d.cands))})
	d.cands = append(d.cands, c)
}

// advance runs the checksum to the end of what has arrived, noting its
// state after each magic pair and at the end of each candidate.
func (d *Decoder) advance() {
	d.look = max(d.look, d.base)
	for end := d.end(); d.crcAt < end; {
		d.turn()
		if d.c0 < len(d.cands) && d.crcAt >= d.cands[d.c0].end {
			return // decide can take the first candidate
		}
		stop, magic := end, false
		if d.look < end {
			if i := bytes.IndexByte(d.at(d.look), Magic0); i < 0 {
				d.work += end - d.look
				d.look = end
			} else {
				d.work += uint64(i) + 1
				d.look += uint64(i)
				if d.look+2 <= end {
					d.work++
					if d.at(d.look)[1] != Magic1 {
						d.look++ // no frame starts here
						continue
					}
					stop, magic = max(d.look+2, d.crcAt), true
				}
			}
		}
		if len(d.ends) > 0 && d.ends[0].end < stop {
			stop, magic = d.ends[0].end, false
		}
		seg := d.at(d.crcAt)[:stop-d.crcAt]
		d.crc = ^crc32.Update(^d.crc, castagnoli, seg)
		d.work += uint64(len(seg))
		d.crcAt = stop
		for len(d.ends) > 0 && d.ends[0].end == d.crcAt {
			d.turn()
			r := d.ends.pop()
			if r.seq >= d.seq+uint64(d.c0) {
				c := &d.cands[r.seq-d.seq]
				c.crcEnd, c.ended = d.crc, true
			}
		}
		if magic && d.look+2 == d.crcAt {
			start := d.look
			d.look++
			p := pending{start, d.crc}
			if len(d.pend) > 0 || start+HeaderSize > end {
				d.pend = append(d.pend, p)
			} else {
				d.header(p)
			}
		}
	}
}

// decide decides the candidates in the order they start, as far as what
// has arrived allows; it reports whether to go on: it emitted a frame, or
// the running checksum has more to read before the first candidate.
func (d *Decoder) decide(emit func(Frame)) bool {
	for end := d.end(); d.base < end; {
		d.turn()
		i := bytes.IndexByte(d.at(d.base), Magic0)
		if i < 0 {
			d.work += end - d.base
			d.Skipped += end - d.base
			d.base = end
			break
		}
		d.work += uint64(i) + 1
		d.Skipped += uint64(i)
		d.base += uint64(i)
		if d.c0 < len(d.cands) && d.cands[d.c0].start == d.base {
			c := d.cands[d.c0]
			if !c.ended {
				return d.crcAt < end // the checksum has yet to reach its end
			}
			if c.end+TrailSize > end {
				return false // the candidate waits for its bytes
			}
			if d.sum(c) == binary.LittleEndian.Uint32(d.at(c.end)) {
				h := d.at(c.start)
				d.work += HeaderSize + TrailSize
				d.base = c.end + TrailSize
				d.dropBefore(d.base)
				emit(Frame{Version: h[2], Kind: Kind(h[3]), ID: binary.LittleEndian.Uint32(h[4:]),
					Payload: h[HeaderSize : c.end-c.start]})
				return true
			}
			d.Broken++
			d.Skipped++
			d.base++
			d.dropBefore(d.base)
			continue
		}
		if len(d.pend) > 0 && d.pend[0].start == d.base || d.base+2 > end {
			return false // the header waits for its bytes
		}
		if d.base >= d.look {
			return d.crcAt < end // the running checksum has yet to come here
		}
		d.countBad(d.at(d.base))
		d.Skipped++
		d.base++
	}
	return false
}

// sum returns the checksum of the head candidate c's bytes. When no other
// candidate starts within c, it reads them: such candidates cover disjoint
// stretches of the stream, so no byte is read this way twice, and a clean
// stream costs no multiplication. Otherwise it derives the checksum from
// the running checksum's states at c's two ends.
func (d *Decoder) sum(c candidate) uint32 {
	next := d.c0 + 1
	alone := (next == len(d.cands) || d.cands[next].start >= c.end+TrailSize) &&
		(len(d.pend) == 0 || d.pend[0].start >= c.end+TrailSize)
	if alone {
		d.work += c.end - c.start - 2
		return crc32.Checksum(d.at(c.start + 2)[:c.end-c.start-2], castagnoli)
	}
	d.work += 4
	return ^(c.crcEnd ^ shift(c.crc^0xFFFFFFFF, c.end-c.start-2))
}

// countBad counts a magic byte that starts no candidate: the byte after it
// is wrong, or its header is (version, length).
func (d *Decoder) countBad(h []byte) {
	d.work += 2
	if h[1] != Magic1 {
		return
	}
	d.work += HeaderSize - 2
	d.Broken++
	if n := binary.LittleEndian.Uint32(h[8:]); h[2] == Version && n > uint32(d.max) {
		d.Oversized.Kind, d.Oversized.ID, d.Oversized.Length, d.Oversized.OK = Kind(h[3]), binary.LittleEndian.Uint32(h[4:]), n, true
	}
}

// dropBefore forgets the candidates and pending headers that start before
// o. The candidates left move to the front only when at least as many have
// gone, so that each moves a bounded number of times.
func (d *Decoder) dropBefore(o uint64) {
	for d.c0 < len(d.cands) && d.cands[d.c0].start < o {
		d.turn()
		d.c0++
	}
	if live := len(d.cands) - d.c0; d.c0 >= live {
		d.cands = d.cands[:copy(d.cands, d.cands[d.c0:])]
		d.seq += uint64(d.c0)
		d.c0 = 0
		d.work += uint64(live)
	}
	n := 0
	for n < len(d.pend) && d.pend[n].start < o {
		d.turn()
		n++
	}
	d.pend = d.pend[:copy(d.pend, d.pend[n:])]
}

// endRef is where candidate number seq ends.
type endRef struct{ end, seq uint64 }

// endHeap is a min-heap of candidates' ends.
type endHeap []endRef

func (h *endHeap) push(r endRef) {
	*h = append(*h, r)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p].end <= s[i].end {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *endHeap) pop() endRef {
	s := *h
	r := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		m, l := i, 2*i+1
		if l < n && s[l].end < s[m].end {
			m = l
		}
		if l+1 < n && s[l+1].end < s[m].end {
			m = l + 1
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return r
}

// shift returns the CRC-32C register state x after n zero bytes: x times
// x^(8n) modulo the polynomial, in the reflected bit order of the register.
func shift(x uint32, n uint64) uint32 {
	if n < uint64(len(pow8n())) {
		return multModP(x, pow8n()[n])
	}
	return multModP(x, xPow8n(n))
}

// pow8n holds x^(8n) modulo the polynomial for every length n a frame of
// MaxPayload may checksum (256 KiB, made on first use).
var pow8n = sync.OnceValue(func() []uint32 {
	t := make([]uint32, MaxPayload+HeaderSize)
	p := uint32(1) << 31 // x^0
	for n := range t {
		t[n] = p
		p = multModP(x2k[3], p) // times x^8
	}
	return t
})

// castagnoliPoly is the CRC-32C polynomial, reflected.
const castagnoliPoly = 0x82F63B78

// multModP multiplies a and b modulo the polynomial (bit 31 is x^0): at
// most one turn per bit of a, and none past its last bit set.
func multModP(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0 && a != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
			a ^= m
		}
		if b&1 != 0 {
			b = b>>1 ^ castagnoliPoly
		} else {
			b >>= 1
		}
	}
	return p
}

// x2k holds x^(2^k) modulo the polynomial.
var x2k = func() (t [64]uint32) {
	p := uint32(1) << 30 // x^1
	for k := range t {
		t[k] = p
		p = multModP(p, p)
	}
	return t
}()

// xPow8n returns x^(8n) modulo the polynomial.
func xPow8n(n uint64) uint32 {
	p := uint32(1) << 31 // x^0
	for k := 3; n != 0; n, k = n>>1, k+1 {
		if n&1 != 0 {
			p = multModP(x2k[k], p)
		}
	}
	return p
}
