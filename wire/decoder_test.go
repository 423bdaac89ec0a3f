package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// maxTurnsPerByte bounds the turns of the decoder's loops per byte of
// input: about 5 on the worst inputs fed a byte at a time.
const maxTurnsPerByte = 8

// faulty returns a copy of frame f with byte i set to v and the checksum
// made good again: a frame whose only fault is byte i.
func faulty(f []byte, i int, v byte) []byte {
	c := append([]byte(nil), f...)
	c[i] = v
	end := len(c) - TrailSize
	binary.LittleEndian.PutUint32(c[end:], crc32.Checksum(c[2:end], castagnoli))
	return c
}

// header returns a frame header claiming a payload of n bytes.
func header(kind Kind, id, n uint32) []byte {
	h := BeginFrame(nil, kind, id)
	binary.LittleEndian.PutUint32(h[8:], n)
	return h
}

// show returns in as hex, the first 200 bytes of it when it is longer.
func show(in []byte) string {
	if len(in) > 200 {
		return fmt.Sprintf("%x... (%d bytes)", in[:200], len(in))
	}
	return fmt.Sprintf("%x", in)
}

// cat joins byte slices into a new one.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// decodeChecked feeds in to a new decoder of the given maximum in pieces
// of step bytes and returns what it found. It fails t when the decoder
// finds other frames, or counts other broken or skipped bytes, than the
// rescanning decoder, or when its work or the turns of its loops are more
// than linear (a loop that does not end stops at that bound).
func decodeChecked(t *testing.T, max int, in []byte, step int) (*Decoder, []got) {
	t.Helper()
	d := NewDecoder(max)
	d.maxTurns = maxTurnsPerByte*uint64(len(in)) + 64
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("pieces of %d of %s: %v", step, show(in), r)
		}
	}()
	var chunks [][]byte
	for i := 0; i < len(in); i += step {
		chunks = append(chunks, in[i:min(i+step, len(in))])
	}
	out := decodeAll(d, chunks...)
	ref := newRefDecoder(max)
	var want []got
	ref.Feed(in, func(f Frame) { want = append(want, got{f.Kind, f.ID, string(f.Payload)}) })
	if fmt.Sprint(out) != fmt.Sprint(want) || d.Broken != ref.Broken || d.Skipped != ref.Skipped || d.Oversized != ref.Oversized {
		t.Fatalf("pieces of %d of %s:\ngot %v (broken %d, skipped %d, oversized %+v),\nthe rescanning decoder %v (broken %d, skipped %d, oversized %+v)",
			step, show(in), out, d.Broken, d.Skipped, d.Oversized, want, ref.Broken, ref.Skipped, ref.Oversized)
	}
	if d.work > maxWorkPerByte*uint64(len(in))+64 {
		t.Fatalf("pieces of %d: %d bytes examined for %d bytes of input", step, d.work, len(in))
	}
	return d, out
}

// TestDecoderCases decodes streams made to reach each rule of the decoder
// with a good checksum, so that the rule alone decides: a wrong magic or
// version, a payload at and over the maximum, frames inside frames.
func TestDecoderCases(t *testing.T) {
	const max = 64
	good := AppendFrame(nil, Ping, 7, nil)
	x := AppendFrame(nil, Request, 8, []byte(`{"op":"get"}`))
	atMax := AppendFrame(nil, Request, 9, bytes.Repeat([]byte{'a'}, max))
	overMax := AppendFrame(nil, Request, 10, bytes.Repeat([]byte{'b'}, max+1))
	outer := AppendFrame(nil, Response, 11, x)
	tests := []struct {
		name      string
		stream    []byte
		want      string
		broken    uint64
		oversized bool
	}{
		{"wrong first magic byte, good checksum", cat(faulty(x, 0, 0xA4), good), "[{ping 7 }]", 0, false},
		{"wrong second magic byte, good checksum", cat(faulty(x, 1, 0x5B), good), "[{ping 7 }]", 0, false},
		{"wrong version, good checksum", cat(faulty(x, 2, Version+1), good), "[{ping 7 }]", 1, false},
		{"version 0, good checksum", cat(faulty(x, 2, 0), good), "[{ping 7 }]", 1, false},
		{"payload at the maximum", cat(atMax, good), "[{request 9 " + string(bytes.Repeat([]byte{'a'}, max)) + "} {ping 7 }]", 0, false},
		{"payload one over the maximum, good checksum", cat(overMax, good), "[{ping 7 }]", 1, true},
		{"a frame as another's payload", cat(outer, good), `[{response 11 ` + string(x) + `} {ping 7 }]`, 0, false},
		{"a frame inside a broken frame", cat(header(Request, 12, 40), x, make([]byte, 30), good),
			`[{request 8 {"op":"get"}} {ping 7 }]`, 1, false},
		{"a frame inside two broken frames", cat(header(Request, 12, 50), header(Request, 13, 30), x, make([]byte, 40)),
			`[{request 8 {"op":"get"}}]`, 2, false},
		{"a broken frame inside a frame's payload", cat(AppendFrame(nil, Response, 14, header(Request, 15, 3)), good),
			"[{response 14 " + string(header(Request, 15, 3)) + "} {ping 7 }]", 0, false},
		{"a frame ending where a broken one starts", cat(good, header(Request, 16, 2), []byte("xy..."), good), "[{ping 7 } {ping 7 }]", 1, false},
		{"magic pairs in a row, then a frame", cat([]byte{Magic0, Magic1, Magic0, Magic1, Magic0}, good), "[{ping 7 }]", 2, false},
		{"an incomplete frame", x[:len(x)-1], "[]", 0, false},
		{"an incomplete header", x[:HeaderSize-1], "[]", 0, false},
	}
	for _, tt := range tests {
		for _, step := range []int{len(tt.stream), 1, 2, 5, 13} {
			d, out := decodeChecked(t, max, tt.stream, step)
			if g := fmt.Sprint(out); g != tt.want || d.Broken != tt.broken || d.Oversized.OK != tt.oversized {
				t.Errorf("%s (pieces of %d): %s, broken %d, oversized %v; want %s, broken %d, oversized %v",
					tt.name, step, g, d.Broken, d.Oversized.OK, tt.want, tt.broken, tt.oversized)
			}
		}
	}
}

// TestDecoderRandomStreams decodes streams of frames, broken frames,
// headers and garbage, mixed at random, in pieces of random sizes, and
// compares them with the rescanning decoder.
func TestDecoderRandomStreams(t *testing.T) {
	const max = 48
	rng := rand.New(rand.NewPCG(29, 1))
	payload := func() []byte {
		p := make([]byte, rng.IntN(max+8))
		for i := range p {
			p[i] = "ab\xa5\x5a\x01"[rng.IntN(5)]
		}
		return p
	}
	var in []byte
	for range 2000 {
		in = in[:0]
		for range 1 + rng.IntN(8) {
			f := AppendFrame(nil, Kind(rng.IntN(3)), rng.Uint32(), payload())
			switch rng.IntN(8) {
			case 0: // a byte changed
				f[rng.IntN(len(f))] ^= byte(1 + rng.IntN(255))
			case 1: // a byte changed, the checksum good
				i := rng.IntN(len(f) - TrailSize)
				f = faulty(f, i, f[i]^byte(1+rng.IntN(255)))
			case 2: // cut short
				f = f[:rng.IntN(len(f))]
			case 3: // a header alone
				f = header(Request, 1, uint32(rng.IntN(2*max)))
			case 4: // garbage
				f = []byte("\xa5\x5a\x01\xa5z")[:rng.IntN(6)]
			case 5: // a frame inside a frame
				f = AppendFrame(nil, Response, 2, f)
			}
			in = append(in, f...)
		}
		decodeChecked(t, max, in, 1+rng.IntN(len(in)+1))
	}
}

// TestDecoderBuffersStayBounded feeds megabytes of frames and garbage in
// pieces of every size the transports read: the decoder keeps what is
// undecided, not what it has decided, bytes and candidates alike.
func TestDecoderBuffersStayBounded(t *testing.T) {
	unit := cat(frames(20), []byte("garbage \xa5 and \xa5\x5a"), header(Request, 1, 100), frames(1))
	for _, step := range []int{7, 4096, 65536} {
		d := NewDecoder(0)
		n := 0
		var peak int
		for fed := 0; fed < 2<<20; fed += len(unit) {
			for i := 0; i < len(unit); i += step {
				d.Feed(unit[i:min(i+step, len(unit))], func(Frame) { n++ })
				peak = max(peak, cap(d.win))
			}
		}
		if limit := 4 * max(65536, 2*step); peak > limit {
			t.Errorf("pieces of %d: the buffer grew to %d bytes, more than %d", step, peak, limit)
		}
		if c := max(cap(d.cands), cap(d.pend), cap(d.ends)); c > 64 {
			t.Errorf("pieces of %d: room for %d candidates, headers or ends", step, c)
		}
		if n == 0 || d.Broken == 0 {
			t.Errorf("pieces of %d: %d frames, %d broken", step, n, d.Broken)
		}
	}
}

// TestDecoderLongPayloads decodes frames longer than MaxPayload, for a
// decoder made to accept them, each with a header inside it so that its
// checksum is derived from the running one: past the end of the table of
// powers, the checksum's shift is computed.
func TestDecoderLongPayloads(t *testing.T) {
	var stream []byte
	for _, n := range []int{MaxPayload + 1, MaxPayload + 2, MaxPayload + 3} {
		p := append(header(Request, 1, 8), make([]byte, n-HeaderSize)...)
		stream = AppendFrame(stream, Response, uint32(n), p)
	}
	_, out := decodeChecked(t, MaxPayload+3, stream, 4096)
	if len(out) != 3 {
		t.Errorf("%d frames, want 3", len(out))
	}
}

// TestDecoderReadsACleanStreamOnce: a stream of valid frames fed whole is
// copied once and read once, each frame's first byte twice (found, then
// checked), payloads at the maximum too.
func TestDecoderReadsACleanStreamOnce(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		stream []byte
		n      int
	}{
		{"one frame", 0, frames(1), 1},
		{"two frames", 0, frames(2), 2},
		{"50 frames", 0, frames(50), 50},
		{"payloads at the maximum", 40, cat(AppendFrame(nil, Request, 1, make([]byte, 40)), AppendFrame(nil, Request, 2, make([]byte, 40))), 2},
	}
	for _, tt := range tests {
		d := NewDecoder(tt.max)
		if got := decodeAll(d, tt.stream); len(got) != tt.n {
			t.Errorf("%s: %d frames, want %d", tt.name, len(got), tt.n)
		}
		if want := uint64(2*len(tt.stream) + tt.n); d.work != want {
			t.Errorf("%s: %d bytes examined, want %d", tt.name, d.work, want)
		}
	}
}

// TestDecoderWorkOfMagicBytes counts the work of n magic bytes alone, fed
// whole, step by step: the copy into the buffer (n); the fast path's look
// at the first byte (1); the search for magic pairs, which looks at every
// byte and at the byte after each but the last (2n-1); the running
// checksum (n); and deciding, which finds each byte (n) and looks at each
// but the last with the byte after it to count it (2(n-1)). In all 7n-2:
// work a mutant leaves uncounted shows here.
func TestDecoderWorkOfMagicBytes(t *testing.T) {
	for _, n := range []int{1, 2, 3, 10, 100} {
		d := NewDecoder(0)
		d.Feed(bytes.Repeat([]byte{Magic0}, n), func(Frame) {})
		if want := uint64(7*n - 2); d.work != want {
			t.Errorf("%d magic bytes: %d bytes examined, want %d", n, d.work, want)
		}
	}
}

// TestDecoderWorkOfTheGeneralWay counts, step by step, the work of inputs
// that the fast path leaves to the general one.
//
// A frame of k payload bytes, without another magic byte, fed in two
// pieces, the last byte apart: the first piece is copied (15+k); the fast
// path finds the magic (1) and finds the frame incomplete; the search for
// magic pairs reads the pair (2) and the rest of the piece (14+k); the
// header is checked (12); the running checksum covers the pair (2) and the
// rest up to the frame's checksum (10+k); deciding finds the magic (1) and
// waits for the checksum's last byte. The second piece is copied (1);
// deciding finds the magic again (1), reads the frame's bytes from its
// version to its end once more, as no other candidate lies within it
// (10+k), and takes the frame, its header and checksum (16). In all 85+4k.
//
// A header alone whose version is wrong (12 bytes): copied (12); the fast
// path finds the magic (1) and stops at the version; the search for magic
// pairs reads the pair (2), checks the header (12) and reads on from the
// byte after the magic to the end (11); the running checksum covers the
// pair (2) and the rest (10); deciding finds the magic (1), counts the
// header broken on reading it (2 and 10), and reads on from the byte after
// the magic to the end (11). In all 74.
func TestDecoderWorkOfTheGeneralWay(t *testing.T) {
	for _, k := range []int{0, 1, 10, 100} {
		f := AppendFrame(nil, Request, 1, bytes.Repeat([]byte{'x'}, k))
		if bytes.IndexByte(f[1:], Magic0) >= 0 {
			t.Fatalf("the frame of %d bytes has another magic byte: % x", k, f)
		}
		d := NewDecoder(0)
		n := 0
		d.Feed(f[:len(f)-1], func(Frame) { n++ })
		d.Feed(f[len(f)-1:], func(Frame) { n++ })
		if want := uint64(85 + 4*k); d.work != want || n != 1 {
			t.Errorf("a frame of %d payload bytes in two pieces: %d bytes examined, %d frames; want %d, 1", k, d.work, n, want)
		}
	}
	d := NewDecoder(0)
	d.Feed(append([]byte{Magic0, Magic1, Version + 1}, make([]byte, 9)...), func(Frame) {})
	if d.work != 74 || d.Broken != 1 {
		t.Errorf("a header of another version: %d bytes examined, %d broken; want 74, 1", d.work, d.Broken)
	}
}
