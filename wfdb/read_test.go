package wfdb

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// A header ParseHeader refuses is an error of the field at fault, whose
// message names the field's line and what it holds.
func TestParseHeaderErrors(t *testing.T) {
	for _, tt := range []struct {
		header string
		want   error
		names  string // what the message quotes of the header
	}{
		{"r 2 360\nr.dat 212 200\n", ErrSignalCount, "announces 2 signals and describes 1"},
		{"r 0\n", ErrSignalCount, `line 1: number of signals "0"`},
		{"r 65\n", ErrSignalCount, `line 1: number of signals "65"`},
		{"r x\n", ErrSignalCount, `line 1: number of signals "x"`},
		{"r\n", ErrRecordLine, `line 1: "r"`},
		{"# only a comment\n\n", ErrRecordLine, "no record line"},
		{"", ErrRecordLine, "no record line"},
		{"r 1 0\n", ErrRate, `line 1: sampling frequency "0"`},
		{"r 1 1000000\n", ErrRate, `line 1: sampling frequency "1000000"`},
		{"r 1 x/360\n", ErrRate, `line 1: sampling frequency "x/360"`},
		{"r 1 360 -1\n", ErrSampleCount, `line 1: number of samples "-1"`},
		{"r 1 360 x\n", ErrSampleCount, `line 1: number of samples "x"`},
		{"r 1 360\nr.dat\n", ErrSignalLine, `line 2: "r.dat"`},
		{"# a comment\nr 1 360\n\n  r.dat  \n", ErrSignalLine, `line 4: "r.dat"`},
		{"r 1 360\nr.dat x\n", ErrFormat, `line 2: format "x"`},
		{"r 1 360\nr.dat :4\n", ErrFormat, `line 2: format ":4"`},
		{"r 1 360\nr.dat 212 200(x)\n", ErrBaseline, `line 2: baseline in "200(x)"`},
		{"r 1 360\nr.dat 212 200 11 1024 995 x 0 MLII\n", ErrChecksum, `line 2: checksum "x"`},
		// the signals of a file apart
		{"r 3 360\na.dat 16\nb.dat 16\na.dat 16\n", ErrSignalGroup, "line 4: signal 2 in a.dat, after signal 1 in b.dat, and signal 0 in a.dat before it"},
		{"r 5 360\na.dat 16\na.dat 16\n# a comment\nb.dat 212\n\nb.dat 212\na.dat 16\n", ErrSignalGroup, "line 8: signal 4 in a.dat, after signal 3 in b.dat, and signal 0 in a.dat before it"},
		{"r 1 360\nr.dat 212 200 11 1024 995 1.5\n", ErrChecksum, `line 2: checksum "1.5"`},
		{"r 1 360\nr.dat 212x0 200\n", ErrSamplesPerFrame, `line 2: samples per frame in format "212x0"`},
		{"r 1 360\nr.dat 212x 200\n", ErrSamplesPerFrame, `line 2: samples per frame in format "212x"`},
		{"r 1 360\nr.dat 212:x 200\n", ErrSkew, `line 2: skew in format "212:x"`},
		{"r 1 360\nr.dat 212: 200\n", ErrSkew, `line 2: skew in format "212:"`},
		{"r 1 360\nr.dat 212:-1 200\n", ErrSkew, `line 2: skew in format "212:-1"`},
		{"r 1 360\nr.dat 16+x 200\n", ErrByteOffset, `line 2: byte offset in format "16+x"`},
		{"r 1 360\nr.dat 16+-4 200\n", ErrByteOffset, `line 2: byte offset in format "16+-4"`},
		{"r 1 360\nr.dat 16+4+4 200\n", ErrByteOffset, `line 2: byte offset in format "16+4+4"`},
		{"r 1 360\nr.dat 16+4:1 200\n", ErrByteOffset, `line 2: byte offset in format "16+4:1"`},
		{"r 1 360\n" + strings.Repeat("x", 70000) + "\n", bufio.ErrTooLong, "lines of up to 65536 bytes"},
		// a multi-segment record: its record line's name carries the
		// number of segments, and segment lines (a record's name and
		// its samples) follow, not signal lines
		{"m/2 1 360 200\nm_1 100\nm_2 100\n", ErrMultiSegment, `line 1: record "m/2"`},
		{"# a layout, then a gap\nm/3 2 360 150\nm_layout 0\nm_1 100\n~ 50\n", ErrMultiSegment, `line 2: record "m/3"`},
		{"m/ 1 360\nr.dat 16\n", ErrMultiSegment, `line 1: record "m/"`},
		// the snip command given writes a record without annotations too:
		// snip stops before the signals when -a names an annotator the
		// record lacks
		{"m/2 1 360 200\nm_1 100\nm_2 100\n", ErrMultiSegment, "(snip -i RECORD -n NEW -O 16; -a atr also copies its beat annotations, when it has an atr file)"},
	} {
		_, err := ParseHeader([]byte(tt.header))
		if !errors.Is(err, tt.want) {
			t.Errorf("header %.40q: %v; want %v", tt.header, err, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.names) {
			t.Errorf("header %.40q: %v; want it to name %s", tt.header, err, tt.names)
		}
	}
	if h, err := ParseHeader([]byte("r 1 360\nr.dat 212x2:1+0 200\n")); err != nil || h.Signals[0].Format != 212 {
		t.Errorf("format with samples per frame, skew and offset: %+v %v", h, err)
	}
}

// What a header says, ParseHeader reads, and what it leaves out takes
// WFDB's defaults: 250 Hz, a gain of 200, a baseline of the ADC zero.
func TestParseHeader(t *testing.T) {
	sig := func(format int, gain float64, baseline int, desc string) Signal {
		return Signal{File: "r.dat", Format: format, Gain: gain, Baseline: baseline, Units: "mV", Description: desc}
	}
	checked := func(s Signal, checksum int) Signal {
		s.Checksum, s.HasChecksum = checksum, true
		return s
	}
	for _, tt := range []struct {
		hea  string
		want Header
	}{
		{"r 1\nr.dat 16\n", Header{Record: "r", Rate: 250, Signals: []Signal{sig(16, 200, 0, "")}}},
		{"r 1 999999.5/360 0\nr.dat 212 100\n", Header{Record: "r", Rate: 999999.5, Signals: []Signal{sig(212, 100, 0, "")}}},
		{"r 1 360 7\nr.dat 212 0 12\n", Header{Record: "r", Rate: 360, Samples: 7, Signals: []Signal{sig(212, 200, 0, "")}}},
		{"r 1 360\nr.dat 212 x/mV 12 1024\n", Header{Record: "r", Rate: 360, Signals: []Signal{sig(212, 200, 1024, "")}}},
		{"r 1 360\nr.dat 212 (5) 12 1024\n", Header{Record: "r", Rate: 360, Signals: []Signal{sig(212, 200, 5, "")}}},
		{"r 1 360\nr.dat 212 400(-3)/mV 12 1024 0\n", Header{Record: "r", Rate: 360, Signals: []Signal{sig(212, 400, -3, "")}}},
		{"r 1 360\nr.dat 212 400(-3)/mV 12 1024 0 0\n", Header{Record: "r", Rate: 360, Signals: []Signal{checked(sig(212, 400, -3, ""), 0)}}},
		{"r 1 360\nr.dat 212 400 12 1024 0 -22131 0 V5 lead\n", Header{Record: "r", Rate: 360, Signals: []Signal{checked(sig(212, 400, 1024, "V5 lead"), -22131)}}},
		{"r 1 360\nr.dat 212 400 12 1024 0 65535\n", Header{Record: "r", Rate: 360, Signals: []Signal{checked(sig(212, 400, 1024, ""), 65535)}}},
		{"r 1 360\nr.dat 212 100/mmHg 12 0\n", Header{Record: "r", Rate: 360, Signals: []Signal{{File: "r.dat", Format: 212, Gain: 100, Units: "mmHg"}}}},
		{"r 1 360\nr.dat 212x4:1+0 100\n", Header{Record: "r", Rate: 360, Signals: []Signal{{File: "r.dat", Format: 212, Gain: 100, Units: "mV", SamplesPerFrame: 4, Skew: 1}}}},
		{"r 1 360\nr.dat 16x1:30+512 100\n", Header{Record: "r", Rate: 360, Signals: []Signal{{File: "r.dat", Format: 16, Gain: 100, Units: "mV", SamplesPerFrame: 1, Skew: 30, ByteOffset: 512}}}},
		{"r 1 360\nr.dat 16:2 100\n", Header{Record: "r", Rate: 360, Signals: []Signal{{File: "r.dat", Format: 16, Gain: 100, Units: "mV", Skew: 2}}}},
		{"r 1 360\nr.dat 16:0 100\n", Header{Record: "r", Rate: 360, Signals: []Signal{{File: "r.dat", Format: 16, Gain: 100, Units: "mV"}}}}, // a skew of none
		{"r 1 360\nr.dat 212+6 100\n", Header{Record: "r", Rate: 360, Signals: []Signal{{File: "r.dat", Format: 212, Gain: 100, Units: "mV", ByteOffset: 6}}}},
		{"r 1\nr.dat 212\nmore.dat 16\n", Header{Record: "r", Rate: 250, Signals: []Signal{sig(212, 200, 0, "")}}},
		// the signals of a file consecutive, another file's after them,
		// and a line past the signals the record line gives disregarded
		{"r 3\nr.dat 16\nr.dat 16\ns.dat 16\nr.dat 16\n", Header{Record: "r", Rate: 250, Signals: []Signal{sig(16, 200, 0, ""), sig(16, 200, 0, ""), {File: "s.dat", Format: 16, Gain: 200, Units: "mV"}}}},
	} {
		h, err := ParseHeader([]byte(tt.hea))
		if err != nil {
			t.Errorf("%q: %v", tt.hea, err)
			continue
		}
		if !reflect.DeepEqual(*h, tt.want) {
			t.Errorf("%q:\n%+v, want\n%+v", tt.hea, *h, tt.want)
		}
	}
	// as many signals as a header may have
	hea := "r 64\n" + strings.Repeat("r.dat 212\n", 64)
	if h, err := ParseHeader([]byte(hea)); err != nil || len(h.Signals) != 64 {
		t.Errorf("64 signals: %v", err)
	}
}

// A header is its file's when its record line names the record the file's
// name does, whatever the file's directory and extension; another record's,
// or one whose name differs in case or is only the start of the file's,
// is refused, naming both.
func TestCheckName(t *testing.T) {
	for _, tt := range []struct {
		record, file string
		names        string // what the error names; "" for none
	}{
		{"100", "100.hea", ""},
		{"100", "/data/mitdb/100.hea", ""},
		{"100", "mitdb/100", ""},
		{"sel14046", "qtdb/sel14046.HEA", ""},
		{"100s", "100.hea", "the header in 100.hea is of record 100s, not 100"},
		{"100", "100s.hea", "the header in 100s.hea is of record 100, not 100s"}, // WFDB's library takes it
		{"r", "/data/R.hea", "the header in R.hea is of record r, not R"},
		{"r", "r.dat.hea", "is of record r, not r.dat"},
	} {
		h, err := ParseHeader([]byte(tt.record + " 1 360\nr.dat 16\n"))
		if err != nil {
			t.Fatal(err)
		}
		err = h.CheckName(tt.file)
		if tt.names == "" {
			if err != nil {
				t.Errorf("record %s in %s: %v", tt.record, tt.file, err)
			}
			continue
		}
		if !errors.Is(err, ErrRecordName) || !strings.Contains(err.Error(), tt.names) {
			t.Errorf("record %s in %s: %v; want ErrRecordName naming %s", tt.record, tt.file, err, tt.names)
		}
	}
}

// Decode212 gives each signal one sample a whole frame, the samples
// packed two to three bytes across frames: with an odd number of signals
// every other frame's last sample shares its bytes with the next frame's
// first, and a last frame cut short is dropped, so that every signal has
// as many samples. A pair's first sample is whole in its first two bytes.
func TestDecode212(t *testing.T) {
	// samples 1, -1 / 2047, -2048 packed two to three bytes
	if got, err := Decode212([]byte{0x01, 0xF0, 0xFF, 0xFF, 0x87, 0x00}, 1, 0); err != nil || fmt.Sprint(got) != "[1 -1 2047 -2048]" {
		t.Errorf("one signal: %v %v, want [1 -1 2047 -2048]", got, err)
	}
	// ten distinct samples, packed in order: signal s of nsig has samples
	// s, nsig+s, ... of them
	samples := []int{1, -1, 2047, -2048, 300, -300, 1234, -1234, 7, -7}
	var packed []byte
	for i := 0; i < len(samples); i += 2 {
		a, b := samples[i]&0xFFF, samples[i+1]&0xFFF
		packed = append(packed, byte(a), byte(a>>8)|byte(b>>8)<<4, byte(b))
	}
	for _, tt := range []struct {
		name  string
		nsig  int
		bytes int      // of packed
		want  []string // each signal's samples
	}{
		{"one signal", 1, 6, []string{"[1 -1 2047 -2048]"}},
		{"one signal, a pair's first sample alone", 1, 5, []string{"[1 -1 2047]"}},
		{"one signal, a byte of a pair", 1, 4, []string{"[1 -1]"}},
		{"two signals", 2, 6, []string{"[1 2047]", "[-1 -2048]"}},
		{"two signals, the last frame cut short", 2, 5, []string{"[1]", "[-1]"}},
		{"three signals, two frames", 3, 9, []string{"[1 -2048]", "[-1 300]", "[2047 -300]"}},
		{"three signals, a frame and one sample of the next", 3, 6, []string{"[1]", "[-1]", "[2047]"}},
		{"three signals, a frame and two samples of the next", 3, 8, []string{"[1]", "[-1]", "[2047]"}},
		{"three signals, no whole frame", 3, 3, []string{"[]", "[]", "[]"}},
		{"five signals, two frames", 5, 15, []string{"[1 -300]", "[-1 1234]", "[2047 -1234]", "[-2048 7]", "[300 -7]"}},
		{"five signals, the second frame a sample short", 5, 14, []string{"[1]", "[-1]", "[2047]", "[-2048]", "[300]"}},
		{"five signals, a frame and a pair's first sample", 5, 11, []string{"[1]", "[-1]", "[2047]", "[-2048]", "[300]"}},
		{"no data", 3, 0, []string{"[]", "[]", "[]"}},
	} {
		for sig, want := range tt.want {
			if got, err := Decode212(packed[:tt.bytes], tt.nsig, sig); err != nil || fmt.Sprint(got) != want {
				t.Errorf("%s: signal %d of %d in %d bytes: %v %v, want %s", tt.name, sig, tt.nsig, tt.bytes, got, err, want)
			}
		}
	}
}

func TestDecode16(t *testing.T) {
	// samples 1, -1 / 32767, -32768, and half a frame
	dat := []byte{0x01, 0x00, 0xFF, 0xFF, 0xFF, 0x7F, 0x00, 0x80, 0x05}
	a, _ := Decode16(dat, 1, 0)
	if fmt.Sprint(a) != "[1 -1 32767 -32768]" {
		t.Errorf("one signal: %v", a)
	}
	s0, _ := Decode16(dat, 2, 0)
	s1, _ := Decode16(dat, 2, 1)
	if fmt.Sprint(s0, s1) != "[1 32767] [-1 -32768]" {
		t.Errorf("two signals: %v %v", s0, s1)
	}
}

// A signal that the data or the header does not have is an error wrapping
// ErrSignalNumber, naming the signal and the number of signals, from
// Decode212, Decode16 and Header.Decode alike.
func TestSignalNumberErrors(t *testing.T) {
	dat := []byte{0x01, 0x00, 0xFF, 0xFF, 0xFF, 0x7F}
	h, err := ParseHeader([]byte("r 2 360\nr.dat 16 200\nr.dat 16 200\n"))
	if err != nil {
		t.Fatal(err)
	}
	decoders := map[string]func(nsig, sig int) ([]int, error){
		"Decode212": func(nsig, sig int) ([]int, error) { return Decode212(dat, nsig, sig) },
		"Decode16":  func(nsig, sig int) ([]int, error) { return Decode16(dat, nsig, sig) },
		"Header.Decode": func(nsig, sig int) ([]int, error) {
			hh := *h
			hh.Signals = h.Signals[:min(nsig, len(h.Signals))]
			return hh.Decode(dat, sig)
		},
	}
	for _, tt := range []struct {
		nsig, sig int
		names     string
	}{
		{2, 2, "signal 2 of 2"},
		{2, -1, "signal -1 of 2"},
		{1, 1, "signal 1 of 1"},
		{0, 0, "signal 0 of 0"},
	} {
		for name, decode := range decoders {
			got, err := decode(tt.nsig, tt.sig)
			if !errors.Is(err, ErrSignalNumber) || !strings.Contains(err.Error(), tt.names) {
				t.Errorf("%s of signal %d of %d: %v, %v; want ErrSignalNumber naming %s", name, tt.sig, tt.nsig, got, err, tt.names)
			}
		}
	}
}

// Decode decodes a signal in its file's format, among the signals of that
// file only, after the file's byte offset, its skew taken out, up to the
// header's count of samples.
func TestDecode(t *testing.T) {
	dat16 := []byte{0x01, 0x00, 0xFF, 0xFF, 0xFF, 0x7F, 0x00, 0x80}
	dat212 := []byte{0x01, 0xF0, 0xFF, 0xFF, 0x87, 0x00}
	frames3 := []byte{1, 0, 10, 0, 2, 0, 20, 0, 3, 0, 30, 0}
	tests := []struct {
		header string
		dat    []byte
		sig    int
		want   string
	}{
		{"r 2 360\nr.dat 16 200\nr.dat 16 200\n", dat16, 0, "[1 32767]"},
		{"r 2 360\nr.dat 16 200\nr.dat 16 200\n", dat16, 1, "[-1 -32768]"},
		{"r 2 360 1\nr.dat 16 200\nr.dat 16 200\n", dat16, 1, "[-1]"},
		{"r 2 360\nr.dat 212 200\nr.dat 212 200\n", dat212, 1, "[-1 -2048]"},
		// three signals in a frame and a sample: the frame cut short
		// dropped, for the first signal as for the others
		{"r 3 360\nr.dat 212 200\nr.dat 212 200\nr.dat 212 200\n", dat212, 0, "[1]"},
		{"r 3 360\nr.dat 212 200\nr.dat 212 200\nr.dat 212 200\n", dat212, 2, "[2047]"},
		// the second signal in a file of its own
		{"r 2 360\na.dat 212 200\nb.dat 16 200\n", dat16, 1, "[1 -1 32767 -32768]"},
		// a prolog of 4 bytes, then the frames (1, -1) and (32767, -32768)
		{"r 2 360\nr.dat 16+4 200\nr.dat 16+4 200\n", append([]byte{9, 9, 9, 9}, dat16...), 1, "[-1 -32768]"},
		{"r 1 360\nr.dat 16+4 200\n", append([]byte{9, 9, 9, 9}, dat16...), 0, "[1 -1 32767 -32768]"},
		{"r 1 360\nr.dat 212+3 200\n", append([]byte{9, 9, 9}, dat212...), 0, "[1 -1 2047 -2048]"},
		{"r 1 360\nr.dat 16+8 200\n", dat16, 0, "[]"},
		// a prolog past the file's end: no frame, as WFDB's library
		// reads it
		{"r 1 360\nr.dat 16+9 200\n", dat16, 0, "[]"},
		{"r 2 360\nr.dat 16+100 200\nr.dat 16+100 200\n", dat16, 1, "[]"},
		{"r 1 360\nr.dat 212:1+7 200\n", dat212, 0, "[]"},
		{"r 1 360\nr.dat 16+4 200\n", nil, 0, "[]"}, // an empty file
		// a signal skewed by a frame: its samples a frame on, the last
		// missing; the other signal of the file as it is
		{"r 2 360\nr.dat 16 200\nr.dat 16:1 200\n", dat16, 1, "[-32768 -32768]"},
		{"r 2 360\nr.dat 16 200\nr.dat 16:1 200\n", dat16, 0, "[1 32767]"},
		{"r 1 360\nr.dat 16:1 200\n", dat16, 0, "[-1 32767 -32768 -32768]"},
		// two signals of a file skewed apart, by two frames and by one,
		// in frames (1, 10), (2, 20), (3, 30): each signal's own frames
		// on, none read as missing but past the end
		{"r 2 360\nr.dat 16:2 200\nr.dat 16:1 200\n", frames3, 0, "[3 -32768 -32768]"},
		{"r 2 360\nr.dat 16:2 200\nr.dat 16:1 200\n", frames3, 1, "[20 30 -32768]"},
		{"r 2 360 2\nr.dat 16:2 200\nr.dat 16:1 200\n", frames3, 1, "[20 30]"},
		{"r 1 360\nr.dat 212:2 200\n", dat212, 0, "[2047 -2048 -2048 -2048]"},
		{"r 1 360\nr.dat 212:9 200\n", dat212, 0, "[-2048 -2048 -2048 -2048]"},
		// a skew read past the header's count of samples, where the file
		// has the frames
		{"r 1 360 2\nr.dat 16:1 200\n", dat16, 0, "[-1 32767]"},
		{"r 1 360 3\nr.dat 16:2+2 200\n", dat16, 0, "[-32768 -32768 -32768]"},
	}
	for _, tt := range tests {
		h, err := ParseHeader([]byte(tt.header))
		if err != nil {
			t.Fatal(err)
		}
		got, err := h.Decode(tt.dat, tt.sig)
		if err != nil || fmt.Sprint(got) != tt.want {
			t.Errorf("%q signal %d: %v %v, want %s", tt.header, tt.sig, got, err, tt.want)
		}
	}
	for _, tt := range []struct {
		hea  string
		want error
	}{
		{"r 1 360\nr.dat 8 200\n", ErrFormat},
		{"r 2 360\nr.dat 16 200\nr.dat 212 200\n", ErrFormat},
		// a signal sampled at twice the record's rate, in the file of the
		// one asked for or that one itself
		{"r 2 360\nr.dat 16 200\nr.dat 16x2 200\n", ErrSamplesPerFrame},
		{"r 1 360\nr.dat 16x2:1+0 200\n", ErrSamplesPerFrame},
		// a file of two prologs, one past the file's end (8 bytes)
		{"r 2 360\nr.dat 16+2 200\nr.dat 16 200\n", ErrByteOffset},
		{"r 2 360\nr.dat 16 200\nr.dat 16+2 200\n", ErrByteOffset},
		{"r 2 360\nr.dat 16+9 200\nr.dat 16 200\n", ErrByteOffset},
	} {
		h, err := ParseHeader([]byte(tt.hea))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Decode(dat16, 0); !errors.Is(err, tt.want) {
			t.Errorf("header %q: %v, want %v", tt.hea, err, tt.want)
		}
	}
	if h, err := ParseHeader([]byte("r 2 360\nr.dat 16x1 200\ns.dat 16x2 200\n")); err != nil {
		t.Fatal(err)
	} else if got, err := h.Decode(dat16, 0); err != nil || len(got) == 0 {
		t.Errorf("a signal of one sample a frame, with one of two in another file: %v %v", got, err)
	}
	h, _ := ParseHeader([]byte("r 1 360\nr.dat 16 200\n"))
	if h.Signals[0].Invalid() != -32768 || (Signal{Format: 212}).Invalid() != -2048 {
		t.Errorf("invalid samples %d (16) and %d (212)", h.Signals[0].Invalid(), (Signal{Format: 212}).Invalid())
	}
}

// A signal file of fewer frames than the header's count of samples is
// refused, naming the record, the file, the samples the header gives and
// those the file holds; a skew does not count, and a header without a
// count reads every whole frame.
func TestDecodeShortData(t *testing.T) {
	dat16 := []byte{0x01, 0x00, 0xFF, 0xFF, 0xFF, 0x7F, 0x00, 0x80}
	dat212 := []byte{0x01, 0xF0, 0xFF, 0xFF, 0x87, 0x00}
	for _, tt := range []struct {
		header string
		dat    []byte
		names  string // what the message says of the record and its file
	}{
		{"r 2 360 3\nr.dat 16 200\nr.dat 16 200\n", dat16, "record r, signal 1: the header gives 3 samples and r.dat holds 2"},
		{"r 1 360 5\nr.dat 212 200\n", dat212, "record r, signal 0: the header gives 5 samples and r.dat holds 4"},
		// the prolog's bytes are not samples
		{"r 1 360 4\nr.dat 16+2 200\n", dat16, "gives 4 samples and r.dat holds 3"},
		{"r 1 360 1\nr.dat 16+8 200\n", dat16, "gives 1 sample and r.dat holds 0"},
		{"r 1 360 1\nr.dat 16+9 200\n", dat16, "gives 1 sample and r.dat holds 0"},
		// a skewed signal's last samples are missing, not its file's
		{"r 1 360 5\nr.dat 16:1 200\n", dat16, "gives 5 samples and r.dat holds 4"},
		// three signals: one whole frame and a part
		{"r 3 360 2\nr.dat 212 200\nr.dat 212 200\nr.dat 212 200\n", dat212, "signal 2: the header gives 2 samples and r.dat holds 1"},
		{"100s 2 360 21600\n100s.dat 212 200 11 1024 995 -22131 0 MLII\n100s.dat 212 200 11 1024 1011 20052 0 V5\n", dat212[:3], "record 100s, signal 1: the header gives 21600 samples and 100s.dat holds 1"},
	} {
		h, err := ParseHeader([]byte(tt.header))
		if err != nil {
			t.Fatal(err)
		}
		sig := len(h.Signals) - 1
		got, err := h.Decode(tt.dat, sig)
		if !errors.Is(err, ErrShortData) || !strings.Contains(err.Error(), tt.names) {
			t.Errorf("%q signal %d: %v %v; want ErrShortData naming %s", tt.header, sig, got, err, tt.names)
		}
	}
	h, err := ParseHeader([]byte("r 1 360\nr.dat 16 200\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := h.Decode(dat16[:6], 0); err != nil || fmt.Sprint(got) != "[1 -1 32767]" {
		t.Errorf("a header without a count of samples: %v %v, want [1 -1 32767]", got, err)
	}
}

// A signal whose line gives a checksum, of a record whose line gives the
// number of samples, is read only when its first samples in its file sum
// to the checksum in 16 bits, as WFDB's library checks a record read
// whole (and in a file with a prolog too, which WFDB's library leaves
// unchecked): its prolog out of the sum, the samples its skew passes over
// in, its samples past the count out. Without a count or a checksum
// nothing is checked. A mismatch names the record, the signal, its file,
// the sum and the checksum.
func TestDecodeChecksum(t *testing.T) {
	dat16 := []byte{0x01, 0x00, 0xFF, 0xFF, 0xFF, 0x7F, 0x00, 0x80} // 1, -1, 32767, -32768
	dat212 := []byte{0x01, 0xF0, 0xFF, 0xFF, 0x87, 0x00}            // 1, -1, 2047, -2048
	for _, tt := range []struct {
		header string
		dat    []byte
		sig    int
		want   string // the samples, or what the error names
	}{
		{"r 1 360 4\nr.dat 16 200 16 0 0 -1\n", dat16, 0, "[1 -1 32767 -32768]"},
		{"r 1 360 4\nr.dat 16 200 16 0 0 65535\n", dat16, 0, "[1 -1 32767 -32768]"}, // -1 in 16 bits
		{"r 1 360 4\nr.dat 16 200 16 0 0 0\n", dat16, 0, "record r, signal 0: the samples of r.dat sum to -1 in 16 bits, and the header's checksum is 0"},
		{"r 1 360 4\nr.dat 212 200 12 0 0 -1 0 ECG\n", dat212, 0, "[1 -1 2047 -2048]"},
		{"r 1 360 4\nr.dat 212 200 12 0 0 -2 0 ECG\n", dat212, 0, "sum to -1 in 16 bits, and the header's checksum is -2"},
		// two signals of a file, each its own sum: 32768 and -32769,
		// -32768 and 32767 in 16 bits
		{"r 2 360 2\nr.dat 16 200 16 0 0 -32768\nr.dat 16 200 16 0 0 32767\n", dat16, 0, "[1 32767]"},
		{"r 2 360 2\nr.dat 16 200 16 0 0 -32768\nr.dat 16 200 16 0 0 32767\n", dat16, 1, "[-1 -32768]"},
		{"r 2 360 2\nr.dat 16 200 16 0 0 -32768\nr.dat 16 200 16 0 0 0\n", dat16, 1, "record r, signal 1: the samples of r.dat sum to 32767"},
		// the samples the count gives, not those past it
		{"r 1 360 2\nr.dat 16 200 16 0 0 0\n", dat16, 0, "[1 -1]"},
		{"r 1 360 3\nr.dat 16 200 16 0 0 -1\n", dat16, 0, "sum to 32767 in 16 bits, and the header's checksum is -1"},
		// the prolog is not a sample; the samples a skew passes over are
		{"r 1 360 2\nr.dat 16+2 200 16 0 0 32766\n", dat16, 0, "[-1 32767]"},
		// a file with a prolog is checked too, where WFDB's library,
		// having sought past the prolog, checks nothing
		{"r 1 360 2\nr.dat 16+2 200 16 0 0 -1\n", dat16, 0, "record r, signal 0: the samples of r.dat sum to 32766 in 16 bits, and the header's checksum is -1"},
		{"r 1 360 3\nr.dat 16:1 200 16 0 0 32767\n", dat16, 0, "[-1 32767 -32768]"},
		{"r 1 360 3\nr.dat 16:1 200 16 0 0 -2\n", dat16, 0, "sum to 32767 in 16 bits, and the header's checksum is -2"},
		// nothing to check against: no count, or no checksum
		{"r 1 360\nr.dat 16 200 16 0 0 12345\n", dat16, 0, "[1 -1 32767 -32768]"},
		{"r 1 360 4\nr.dat 16 200 16 0 0\n", dat16, 0, "[1 -1 32767 -32768]"},
	} {
		h, err := ParseHeader([]byte(tt.header))
		if err != nil {
			t.Fatal(err)
		}
		got, err := h.Decode(tt.dat, tt.sig)
		if strings.HasPrefix(tt.want, "[") {
			if err != nil || fmt.Sprint(got) != tt.want {
				t.Errorf("%q signal %d: %v, %v; want %s", tt.header, tt.sig, got, err, tt.want)
			}
			continue
		}
		if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q signal %d: %v, %v; want ErrChecksum naming %s", tt.header, tt.sig, got, err, tt.want)
		}
	}
}

// FuzzDecode: a signal that decodes has no more samples than its file
// holds, as many as its header gives when it gives a number, each within
// its format's range, and sums in 16 bits to its checksum when its header
// gives one and a number of samples (and no skew, which moves samples in
// and out); a signal refused is an error of a kind Decode names.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("100s 2 360 4\n100s.dat 212 200 11 1024 995 -1514 0 MLII\n100s.dat 212 200 11 1024 1011 30 0 V5\n"), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 1)
	f.Add([]byte("100s 2 360 4\n100s.dat 212 200 11 1024 995 -1514 0 MLII\n100s.dat 212 200 11 1024 1011 31 0 V5\n"), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 1)
	f.Add([]byte("119e00 2 360 3\n119e00.dat 16 200(1024) 11 0 -199 32370 0 MLII\n119e00.dat 16 200(1024) 11 0 -94 -187 0 V1\n"), []byte{0x39, 0xFF, 0xA2, 0xFF, 0x39, 0xFF, 0xA2, 0xFF, 0x00, 0x80, 0x01, 0x00}, 0)
	f.Add([]byte("r 2 360 3\nr.dat 16:2+2 200\nr.dat 16+2 200\n"), []byte{9, 9, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0}, 0)
	f.Add([]byte("r 1 360\nr.dat 212:5+1 200\n"), []byte{9, 1, 0xF0, 0xFF, 0xFF, 0x87, 0x00}, 0)
	f.Add([]byte("r 1 360\nr.dat 16+9 200\n"), []byte{1, 0, 2, 0}, 0)
	f.Fuzz(func(t *testing.T, hea, dat []byte, sig int) {
		h, err := ParseHeader(hea)
		if err != nil {
			return
		}
		adu, err := h.Decode(dat, sig)
		if err != nil {
			for _, kind := range []error{ErrSignalNumber, ErrFormat, ErrSamplesPerFrame, ErrByteOffset, ErrShortData, ErrChecksum} {
				if errors.Is(err, kind) {
					return
				}
			}
			t.Fatalf("signal %d: %v, an error of no kind Decode names", sig, err)
		}
		if len(adu) > len(dat) {
			t.Fatalf("%d samples from %d bytes", len(adu), len(dat))
		}
		if h.Samples > 0 && len(adu) != h.Samples {
			t.Fatalf("%d samples, of a header that gives %d", len(adu), h.Samples)
		}
		if s := h.Signals[sig]; h.Samples > 0 && s.HasChecksum && s.Skew == 0 {
			sum := 0
			for _, v := range adu {
				sum += v
			}
			if uint16(sum) != uint16(s.Checksum) {
				t.Fatalf("samples summing to %d, of a header whose checksum is %d", int16(sum), s.Checksum)
			}
		}
		for i, v := range adu {
			if v < h.Signals[sig].Invalid() || v > -h.Signals[sig].Invalid()-1 {
				t.Fatalf("sample %d is %d, out of format %d's range", i, v, h.Signals[sig].Format)
			}
		}
	})
}

// FuzzDecode212: every signal of the data has the samples a reader that
// takes the bytes in order, as WFDB's library does, reads of it (read212);
// a signal that is not one of the data's is an error wrapping
// ErrSignalNumber, from Decode16 too.
func FuzzDecode212(f *testing.F) {
	f.Add([]byte{0x01, 0xF0, 0xFF, 0xFF, 0x87, 0x00}, 3, 2)
	f.Add([]byte{0x01, 0xF0, 0xFF, 0xFF, 0x87}, 1, 0)
	// 300, -2048, 1234, -1234, 7 and the next frame's first, -7
	f.Add([]byte{0x2C, 0x81, 0x00, 0xD2, 0xB4, 0x2E, 0x07, 0xF0, 0xF9}, 5, 1)
	f.Add([]byte{0x01, 0xF0, 0xFF}, 2, 2)
	f.Add([]byte{0x01, 0xF0, 0xFF}, 0, 0)
	f.Fuzz(func(t *testing.T, dat []byte, nsig, sig int) {
		if nsig < 1 || sig < 0 || sig >= nsig {
			for name, decode := range map[string]func([]byte, int, int) ([]int, error){"Decode212": Decode212, "Decode16": Decode16} {
				if adu, err := decode(dat, nsig, sig); !errors.Is(err, ErrSignalNumber) {
					t.Fatalf("%s of signal %d of %d: %v, %v; want ErrSignalNumber", name, sig, nsig, adu, err)
				}
			}
			return
		}
		if nsig > 64 {
			return
		}
		want := read212(dat, nsig)
		for sig := range nsig {
			adu, err := Decode212(dat, nsig, sig)
			if err != nil || fmt.Sprint(adu) != fmt.Sprint(want[sig]) {
				t.Fatalf("signal %d of %d in % x: %v %v; want %v", sig, nsig, dat, adu, err, want[sig])
			}
		}
	})
}

// read212 reads format 212 data of nsig signals a sample at a time, frame
// by frame, as WFDB's library does: a pair's first sample from its first
// two bytes, the second from the high half of the middle byte and the
// third. It stops at the first sample whose bytes the data lacks, dropping
// that frame, and returns each signal's samples.
func read212(dat []byte, nsig int) [][]int {
	sigs := make([][]int, nsig)
	frame := make([]int, nsig)
	for pos, second := 0, false; ; {
		for s := range frame {
			var v int
			if !second {
				if pos+2 > len(dat) {
					return sigs
				}
				v = int(dat[pos]) + int(dat[pos+1]%16)*256
				pos += 2
			} else {
				if pos+1 > len(dat) {
					return sigs
				}
				v = int(dat[pos]) + int(dat[pos-1]/16)*256
				pos++
			}
			second = !second
			if v > 2047 {
				v -= 4096
			}
			frame[s] = v
		}
		for s, v := range frame {
			sigs[s] = append(sigs[s], v)
		}
	}
}

// FuzzParseHeader: a header that parses describes as many signals as it
// announces, each of a file and a format, the signals of a file on
// consecutive lines, and no count of its signals' (skew, byte offset,
// samples a frame) is below 0; it is the header of its record's file
// (CheckName) and of no other's; a header refused is an error of one of the
// header's fields, or of a line too long.
func FuzzParseHeader(f *testing.F) {
	f.Add([]byte("100s 2 360 4\n100s.dat 212 200 11 1024 995 0 0 MLII\n100s.dat 212 200 11 1024 1011 0 0 V5\n"))
	f.Add([]byte("r 1 360\nr.dat 212x2:1+0 200\n"))
	f.Add([]byte("r 2 360\nr.dat 16:30+512 200\nr.dat 16+512 200\n"))
	f.Add([]byte("r 1 360\nr.dat 212:-1 200\n"))
	f.Add([]byte("r 1 360\nr.dat 16+4+4 200\n"))
	f.Add([]byte("# only a comment\n"))
	f.Add([]byte("m/2 1 360 200\nm_1 100\nm_2 100\n"))
	f.Add([]byte("r 3 360\na.dat 16\nb.dat 16\na.dat 16\n"))
	f.Add([]byte("r 1 360 4\nr.dat 16 200 16 0 0 -1 0 ECG\n"))
	f.Fuzz(func(t *testing.T, hea []byte) {
		h, err := ParseHeader(hea)
		if err != nil {
			for _, kind := range []error{ErrRecordLine, ErrMultiSegment, ErrSignalCount, ErrRate, ErrSampleCount, ErrSignalLine, ErrFormat, ErrSamplesPerFrame, ErrSkew, ErrByteOffset, ErrBaseline, ErrChecksum, ErrSignalGroup, bufio.ErrTooLong} {
				if errors.Is(err, kind) {
					return
				}
			}
			t.Fatalf("%q: %v, an error of no field", hea, err)
		}
		if len(h.Signals) == 0 {
			t.Fatalf("%q: a header of no signals", hea)
		}
		if strings.Contains(h.Record, "/") {
			t.Fatalf("%q: record %q, a multi-segment record's name, read", hea, h.Record)
		}
		if err := h.CheckName("records/" + h.Record + ".hea"); err != nil {
			t.Fatalf("%q: not the header of its own record: %v", hea, err)
		}
		if err := h.CheckName(h.Record + "x.hea"); !errors.Is(err, ErrRecordName) {
			t.Fatalf("%q: the header of record %sx: %v", hea, h.Record, err)
		}
		for i, s := range h.Signals {
			if s.File == "" {
				t.Fatalf("%q: signal %d without a file", hea, i)
			}
			for j := range i - 1 {
				if s.File == h.Signals[j].File && s.File != h.Signals[i-1].File {
					t.Fatalf("%q: signal %d in %s, after signal %d in %s and %d in %s", hea, i, s.File, i-1, h.Signals[i-1].File, j, s.File)
				}
			}
			if s.Skew < 0 || s.ByteOffset < 0 || s.SamplesPerFrame < 0 {
				t.Fatalf("%q: signal %d of skew %d, byte offset %d, %d samples a frame", hea, i, s.Skew, s.ByteOffset, s.SamplesPerFrame)
			}
		}
	})
}

// ParseAnnotations reads each kind of word, and the words of a file cut
// short or of times that go below zero are refused.
func TestParseAnnotations(t *testing.T) {
	w := func(code, v int) []byte { return []byte{byte(v), byte(code<<2 | v>>8&3)} }
	cat := func(words ...[]byte) []byte { return bytes.Join(words, nil) }
	for _, tt := range []struct {
		name string
		atr  []byte
		want []Annotation // nil for an error
		err  string       // in the error
	}{
		{"NUM, SUB, CHN and AUX before the first annotation",
			cat(w(60, 3), w(61, 1), w(62, 2), w(63, 2), []byte("ab"), w(1, 5)),
			[]Annotation{{Sample: 5, Code: 1, Num: 3, Chan: 2}}, ""},
		{"a time step of code 0, an odd byte at the end",
			cat(w(0, 7), w(1, 5), []byte{9}),
			[]Annotation{{Sample: 12, Code: 1}}, ""},
		{"words after the end word",
			cat(w(1, 5), w(0, 0), w(1, 5)),
			[]Annotation{{Sample: 5, Code: 1}}, ""},
		{"NUM and SUB of 512 and over are negative",
			cat(w(1, 1), w(60, 512), w(61, 1023), w(5, 1)),
			[]Annotation{{Sample: 1, Code: 1, Num: -512, Sub: -1}, {Sample: 2, Code: 5, Num: -512}}, ""},
		{"NUM and SUB of 511", cat(w(1, 1), w(60, 511), w(61, 511)), []Annotation{{Sample: 1, Code: 1, Num: 511, Sub: 511}}, ""},
		{"a SKIP that ends the file", cat(w(1, 1), w(59, 0), []byte{1, 0, 2, 0}), []Annotation{{Sample: 1, Code: 1}}, ""},
		{"a SKIP and an AUX of odd length that end the file",
			cat(w(59, 0), []byte{1, 0, 2, 0}, w(28, 0), w(63, 3), []byte("(AB")),
			[]Annotation{{Sample: 65538, Code: 28, Aux: "(AB"}}, ""},
		{"a truncated SKIP", cat(w(1, 1), w(59, 0), []byte{1, 0, 2}), nil, "truncated SKIP"},
		{"an AUX past the end", cat(w(1, 1), w(63, 4), []byte("(AB")), nil, "AUX of 4 bytes at byte 4 runs past the end (7 bytes)"},
		{"a negative time", cat(w(59, 0), []byte{0xFF, 0xFF, 0xFF, 0xFF}, w(1, 0)), nil, "negative time -1 at byte 6"},
	} {
		got, err := ParseAnnotations(tt.atr)
		if tt.want == nil {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %+v, %v; want an error saying %q", tt.name, got, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}

func FuzzParseAnnotations(f *testing.F) {
	f.Add([]byte{0x01, 0x04, 0x00, 0x00})
	f.Add([]byte{0x05, 0x70, 0x04, 0xFC, '(', 'V', 'F', 'L', 0x00, 0x00})
	f.Fuzz(func(t *testing.T, atr []byte) {
		anns, err := ParseAnnotations(atr)
		if err != nil {
			return
		}
		for i, a := range anns {
			if a.Sample < 0 {
				t.Fatalf("annotation %d at negative sample %d", i, a.Sample)
			}
		}
	})
}
