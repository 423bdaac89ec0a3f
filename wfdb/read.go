// Package wfdb reads and writes PhysioNet's WFDB records: the header
// (.hea), signals in formats 212 and 16 (.dat) and annotation files in the MIT
// format (.atr), as the MIT-BIH databases and their tools use them.
// Package replay plays records it reads; package truth writes the wearer
// model's ECG and true beats as records.
package wfdb

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Header is what a WFDB header (.hea) says about a record.
type Header struct {
	Record  string
	Signals []Signal
	Rate    float64 // samples per second per signal
	Samples int     // per signal; 0 when not given
}

// Signal describes one signal of a record.
type Signal struct {
	File     string
	Format   int
	Gain     float64 // ADC units per mV
	Baseline int     // ADC value of 0 mV
	Units    string  // the physical units, "mV" when the header gives none
	// SamplesPerFrame is the signal's samples in each frame of its file
	// (the format's "x" suffix: 212x2), for a signal sampled at a multiple
	// of the record's rate; 0 when the header gives none, which means 1.
	SamplesPerFrame int
	// Skew is how many frames late the signal is in its file (the
	// format's ":" suffix: 212:3): its sample n is in frame n+Skew.
	Skew int
	// ByteOffset is the length of the file's prolog, the bytes before its
	// first frame (the format's "+" suffix: 16+512), the same for every
	// signal of the file.
	ByteOffset int
	// Checksum is the 16-bit sum of the signal's samples in its file (the
	// line's seventh field), when HasChecksum: Decode checks it when the
	// record line gives the number of samples.
	Checksum    int
	HasChecksum bool
	Description string
}

// ParseHeader reads a WFDB header. Lines may end with CRLF or LF, and be
// of up to bufio.MaxScanTokenSize bytes: a longer one is an error
// wrapping bufio.ErrTooLong. Any other header it refuses is an error
// naming the field at fault, and its line when there is one,
// wrapping the error of that field: ErrRecordLine, ErrMultiSegment (the
// header of a multi-segment record), ErrSignalCount, ErrRate,
// ErrSampleCount, ErrSignalLine, ErrFormat, ErrSamplesPerFrame, ErrSkew,
// ErrByteOffset, ErrBaseline, ErrChecksum or ErrSignalGroup (the signal
// lines of a file apart).
func ParseHeader(data []byte) (*Header, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	h := &Header{}
	nsig := -1
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		if nsig < 0 { // record line: name nsig [fs [nsamples]]
			if len(f) < 2 {
				return nil, fmt.Errorf("header line %d: %q: %w", line, text, ErrRecordLine)
			}
			if strings.Contains(f[0], "/") { // name/segments
				return nil, fmt.Errorf("header line %d: record %q: %w", line, f[0], ErrMultiSegment)
			}
			h.Record = f[0]
			n, err := strconv.Atoi(f[1])
			if err != nil || n < 1 || n > 64 {
				return nil, fmt.Errorf("header line %d: number of signals %q: %w", line, f[1], ErrSignalCount)
			}
			nsig, h.Rate = n, 250
			if len(f) > 2 {
				fs := strings.SplitN(f[2], "/", 2)[0]
				if h.Rate, err = strconv.ParseFloat(fs, 64); err != nil || !(h.Rate > 0 && h.Rate < 1e6) {
					return nil, fmt.Errorf("header line %d: sampling frequency %q: %w", line, f[2], ErrRate)
				}
			}
			if len(f) > 3 {
				if h.Samples, err = strconv.Atoi(f[3]); err != nil || h.Samples < 0 {
					return nil, fmt.Errorf("header line %d: number of samples %q: %w", line, f[3], ErrSampleCount)
				}
			}
			continue
		}
		if len(h.Signals) == nsig {
			break
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("header line %d: %q: %w", line, text, ErrSignalLine)
		}
		s := Signal{File: f[0], Gain: 200, Units: "mV"}
		// format[xsamples][:skew][+offset]
		spec, offset, hasOffset := strings.Cut(f[1], "+")
		spec, skew, hasSkew := strings.Cut(spec, ":")
		fmtStr, spf, hasSPF := strings.Cut(spec, "x")
		var err error
		if s.Format, err = strconv.Atoi(fmtStr); err != nil {
			return nil, fmt.Errorf("header line %d: format %q: %w", line, f[1], ErrFormat)
		}
		if hasSPF {
			if s.SamplesPerFrame, err = strconv.Atoi(spf); err != nil || s.SamplesPerFrame < 1 {
				return nil, fmt.Errorf("header line %d: samples per frame in format %q: %w", line, f[1], ErrSamplesPerFrame)
			}
		}
		if hasSkew {
			if s.Skew, err = strconv.Atoi(skew); err != nil || s.Skew < 0 {
				return nil, fmt.Errorf("header line %d: skew in format %q: %w", line, f[1], ErrSkew)
			}
		}
		if hasOffset {
			if s.ByteOffset, err = strconv.Atoi(offset); err != nil || s.ByteOffset < 0 {
				return nil, fmt.Errorf("header line %d: byte offset in format %q: %w", line, f[1], ErrByteOffset)
			}
		}
		if len(f) > 2 { // gain[(baseline)][/units]
			g, units, _ := strings.Cut(f[2], "/")
			if units != "" {
				s.Units = units
			}
			if open := strings.IndexByte(g, '('); open >= 0 && strings.HasSuffix(g, ")") {
				if s.Baseline, err = strconv.Atoi(g[open+1 : len(g)-1]); err != nil {
					return nil, fmt.Errorf("header line %d: baseline in %q: %w", line, f[2], ErrBaseline)
				}
				g = g[:open]
			} else if len(f) > 4 {
				s.Baseline, _ = strconv.Atoi(f[4]) // the ADC zero stands in for the baseline
			}
			if s.Gain, err = strconv.ParseFloat(g, 64); err != nil || s.Gain == 0 {
				s.Gain = 200
			}
		}
		if len(f) > 6 { // ADC resolution, ADC zero, initial value, checksum
			if s.Checksum, err = strconv.Atoi(f[6]); err != nil {
				return nil, fmt.Errorf("header line %d: checksum %q: %w", line, f[6], ErrChecksum)
			}
			s.HasChecksum = true
		}
		if len(f) > 8 {
			s.Description = strings.Join(f[8:], " ")
		}
		if n := len(h.Signals); n > 0 && h.Signals[n-1].File != s.File {
			for i, prev := range h.Signals {
				if prev.File == s.File {
					return nil, fmt.Errorf("header line %d: signal %d in %s, after signal %d in %s, and signal %d in %s before it: %w", line, n, s.File, n-1, h.Signals[n-1].File, i, s.File, ErrSignalGroup)
				}
			}
		}
		h.Signals = append(h.Signals, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("header: %w; lines of up to %d bytes are read", err, bufio.MaxScanTokenSize)
	}
	if nsig < 0 {
		return nil, fmt.Errorf("header: no record line: %w", ErrRecordLine)
	}
	if len(h.Signals) != nsig {
		return nil, fmt.Errorf("header announces %d signals and describes %d: %w", nsig, len(h.Signals), ErrSignalCount)
	}
	return h, nil
}

// ErrRecordName reports a header whose record line names a record other
// than its file's name does (Header.CheckName).
var ErrRecordName = errors.New("a header's record line names the record its file's name does, without .hea")

// CheckName checks that the header, read from the file of that name (a
// path or a base name, its extension, .hea, dropped), is that record's: its
// record line names the record the file's name does, as WFDB's library
// checks a header it reads from a local file, not to read a header renamed
// by mistake, or a record's as another's. A header that names another
// record is an error wrapping ErrRecordName. WFDB's library, given a
// record's name without a directory, compares only as many characters of
// it as the header's name has (record 100 in 100s.hea passes there), and
// the whole name when given a directory too; CheckName compares the whole
// names.
func (h *Header) CheckName(file string) error {
	base := filepath.Base(file)
	if name := strings.TrimSuffix(base, filepath.Ext(base)); h.Record != name {
		return fmt.Errorf("the header in %s is of record %s, not %s: %w", base, h.Record, name, ErrRecordName)
	}
	return nil
}

// Decode212 decodes format 212 data: pairs of 12-bit two's-complement
// samples packed in three bytes, for nsig interleaved signals. It returns
// the samples of signal sig, one for each whole frame: with an odd number
// of signals, every other frame's last sample shares its three bytes with
// the next frame's first, and a last frame the data holds only part of is
// dropped, as WFDB's library ends a record there, so that every signal has
// as many samples. A pair's first sample needs only its first two bytes.
// A signal sig that is not one of nsig (0 to nsig-1, nsig 1 or more) is an
// error wrapping ErrSignalNumber.
func Decode212(dat []byte, nsig, sig int) ([]int, error) {
	if nsig < 1 || sig < 0 || sig >= nsig {
		return nil, fmt.Errorf("signal %d of %d: %w", sig, nsig, ErrSignalNumber)
	}
	n := len(dat)/3*2 + len(dat)%3/2 // samples
	out := make([]int, n/nsig)
	for f := range out {
		k := f*nsig + sig // the sample's place in the data
		i := k / 2 * 3
		var s int
		if k%2 == 0 {
			s = int(dat[i]) | int(dat[i+1]&0x0F)<<8
		} else {
			s = int(dat[i+2]) | int(dat[i+1]&0xF0)<<4
		}
		if s >= 2048 {
			s -= 4096
		}
		out[f] = s
	}
	return out, nil
}

// Decode16 decodes format 16 data: 16-bit little-endian two's-complement
// samples, for nsig interleaved signals. It returns the samples of signal
// sig; a last incomplete frame is dropped. A signal sig that is not one of
// nsig is an error wrapping ErrSignalNumber, as for Decode212.
func Decode16(dat []byte, nsig, sig int) ([]int, error) {
	if nsig < 1 || sig < 0 || sig >= nsig {
		return nil, fmt.Errorf("signal %d of %d: %w", sig, nsig, ErrSignalNumber)
	}
	frame := 2 * nsig
	out := make([]int, 0, len(dat)/frame)
	for i := 2 * sig; i-2*sig+frame <= len(dat); i += frame {
		out = append(out, int(int16(binary.LittleEndian.Uint16(dat[i:]))))
	}
	return out, nil
}

// ErrSignalNumber reports a signal asked for that the record or data does
// not have: signals are numbered from 0, in the order of the header's
// signal lines, and a record has 1 or more.
var ErrSignalNumber = errors.New("signals are numbered from 0 to one below the number of signals, which is 1 or more")

// ErrFormat reports a signal format that is not read: formats 212 and 16
// are, one format to a signal file. A header's format that is not a
// number is one.
var ErrFormat = errors.New("formats 212 and 16 are read, one to a file")

// ErrSamplesPerFrame reports a signal's samples a frame (the format's "x"
// suffix) that are not a number, 1 or more, or a signal file that holds a
// signal of more than one sample a frame (sampled faster than the
// record): every signal of a file read has one.
var ErrSamplesPerFrame = errors.New("a signal has 1 or more samples a frame, and one is read for each signal of a file")

// ErrShortData reports a signal file of fewer frames than the header's
// number of samples, as of a file cut short: a file holds every sample
// the header counts (its frames after the byte offset), and a header
// without a count is read to its file's last whole frame. WFDB's library
// reports an unexpected end of file there only for signals whose lines
// give a checksum, and otherwise ends the record where the file ends;
// Decode refuses both, not to play less of a record than it says.
var ErrShortData = errors.New("a signal file holds at least the samples its header's record line gives")

// ErrChecksum reports a signal whose samples do not sum to the checksum
// its header line gives (in 16 bits, as WFDB's library compares them),
// checked when the record line gives the number of samples, as WFDB's
// library checks it: the signal file is corrupt, or not the header's.
// WFDB's library reports the mismatch once the record is read and has
// given its samples; Decode refuses the signal, not to play a corrupt
// record as a sound one. WFDB's library does not check the signals of a
// file with a prolog (a byte offset): it seeks past the prolog, and a seek
// turns its check off; Decode checks them, the prolog out of the sum. A
// checksum that is not a whole number is one too.
var ErrChecksum = errors.New("a signal's samples sum, in 16 bits, to the checksum its header line gives, a whole number")

// ErrByteOffset reports a signal's byte offset (the format's "+" suffix)
// that is not a number of bytes, or other than that of another signal of
// the file (a file has one prolog). An offset past the end of the file is
// no error: the file holds no frame then, as WFDB's library reads it.
var ErrByteOffset = errors.New("a byte offset is a number of bytes, 0 or more, the same for every signal of the file")

// Errors of the fields of a header ParseHeader refuses (besides
// ErrFormat, ErrSamplesPerFrame, ErrByteOffset and ErrChecksum, which
// Decode shares).
var (
	// ErrRecordLine reports a header without a record line, or a record
	// line without the record's name and number of signals.
	ErrRecordLine = errors.New("a header's first line that is not a comment is the record line: the record's name and number of signals, then optionally its sampling frequency and number of samples")
	// ErrMultiSegment reports the header of a multi-segment record: its
	// record line's name followed by "/" and the number of segments, and
	// segment lines, each a segment's record and its samples, in place of
	// signal lines.
	ErrMultiSegment = errors.New("multi-segment records (a record line's name/segments, then segment lines) are not read, single-segment records are: WFDB's snip writes one of a multi-segment record (snip -i RECORD -n NEW -O 16; -a atr also copies its beat annotations, when it has an atr file)")
	// ErrSignalCount reports a number of signals out of range, or a
	// header of fewer signal lines than it announces.
	ErrSignalCount = errors.New("a record has 1 to 64 signals, a signal line each after the record line")
	// ErrRate reports a sampling frequency that is not a number, or out
	// of range.
	ErrRate = errors.New("a sampling frequency is a number of samples a second, above 0 and below 1000000")
	// ErrSampleCount reports a number of samples a signal that is not a
	// whole number, or below 0.
	ErrSampleCount = errors.New("a number of samples is a whole number, 0 or more")
	// ErrSignalLine reports a signal line without a file name and a
	// format.
	ErrSignalLine = errors.New("a signal line is a file name and a format, then optionally gain, ADC resolution, ADC zero, initial value, checksum, block size and description")
	// ErrSkew reports a signal's skew (the format's ":" suffix) that is
	// not a number of frames.
	ErrSkew = errors.New("a skew is a number of frames, 0 or more")
	// ErrSignalGroup reports the signal lines of a file apart, another
	// file's between them. WFDB's header format has them consecutive, and
	// WFDB's library, which does not check it, reads each run of them as
	// a file of its own, its signals alone interleaved in it: it reads
	// such a file wrongly, the runs one over the other, and ParseHeader
	// refuses it.
	ErrSignalGroup = errors.New("the signals of a file are on consecutive signal lines")
	// ErrBaseline reports a baseline (in parentheses after the gain) that
	// is not a whole number.
	ErrBaseline = errors.New("a baseline is a whole number of ADC units, in parentheses after the gain")
)

// Decode decodes signal sig of the record from dat, the contents of that
// signal's file: the signals the header places in the same file are
// interleaved in it, in one format, 212 or 16, after the file's byte
// offset (none when the offset is past the file's end). Samples past the
// header's count are dropped, and a file of fewer frames than the count
// is refused (ErrShortData); without a count, every whole frame is read.
// A skewed signal is read that many frames on (its sample n from frame
// n+Skew), and its last samples, past the file's frames, are Invalid:
// every signal of a file has as many samples. A sample equal to the
// signal's Invalid value is one WFDB marks as missing. When the header
// gives a count and the signal's line a checksum, the signal's first
// count samples in its file (before the skew is taken out) are checked
// against it, as WFDB's library checks a record read whole (and in a file
// with a prolog too, which it leaves unchecked): a signal whose samples do
// not sum to it is refused (ErrChecksum). A signal sig the header does not
// describe is an error wrapping ErrSignalNumber.
func (h *Header) Decode(dat []byte, sig int) ([]int, error) {
	if sig < 0 || sig >= len(h.Signals) {
		return nil, fmt.Errorf("signal %d of %d: %w", sig, len(h.Signals), ErrSignalNumber)
	}
	want := h.Signals[sig]
	nsig, pos := 0, 0
	for i, s := range h.Signals {
		if s.File != want.File {
			continue
		}
		if s.Format != 212 && s.Format != 16 || s.Format != want.Format {
			return nil, fmt.Errorf("signal %d in format %d, in a file with signal %d in format %d: %w", i, s.Format, sig, want.Format, ErrFormat)
		}
		if s.SamplesPerFrame > 1 {
			return nil, fmt.Errorf("signal %d of %d samples a frame, in a file with signal %d: %w", i, s.SamplesPerFrame, sig, ErrSamplesPerFrame)
		}
		if s.ByteOffset != want.ByteOffset {
			return nil, fmt.Errorf("signal %d at byte offset %d, in a file with signal %d at %d: %w", i, s.ByteOffset, sig, want.ByteOffset, ErrByteOffset)
		}
		if i == sig {
			pos = nsig
		}
		nsig++
	}
	decode := Decode212
	if want.Format == 16 {
		decode = Decode16
	}
	// a prolog to the file's end or past it leaves no frame, as WFDB's
	// library reads it: a record of no samples
	adu, err := decode(dat[min(want.ByteOffset, len(dat)):], nsig, pos)
	if err != nil {
		return nil, err
	}
	if len(adu) < h.Samples {
		gives := fmt.Sprintf("%d samples", h.Samples)
		if h.Samples == 1 {
			gives = "1 sample"
		}
		return nil, fmt.Errorf("record %s, signal %d: the header gives %s and %s holds %d: %w", h.Record, sig, gives, want.File, len(adu), ErrShortData)
	}
	n := len(adu)
	if h.Samples > 0 && n > h.Samples {
		n = h.Samples
	}
	if h.Samples > 0 && want.HasChecksum {
		sum := 0
		for _, v := range adu[:n] {
			sum += v
		}
		if uint16(sum) != uint16(want.Checksum) {
			return nil, fmt.Errorf("record %s, signal %d: the samples of %s sum to %d in 16 bits, and the header's checksum is %d: %w", h.Record, sig, want.File, int16(sum), want.Checksum, ErrChecksum)
		}
	}
	if skew := want.Skew; skew > 0 {
		k := 0 // samples read from the file
		if skew < len(adu) {
			k = copy(adu, adu[skew:])
		}
		for i := k; i < n; i++ {
			adu[i] = want.Invalid()
		}
	}
	return adu[:n], nil
}

// Invalid is the value WFDB writes for a missing sample in the signal's
// format: the most negative value the format holds.
func (s Signal) Invalid() int {
	if s.Format == 16 {
		return -32768
	}
	return -2048
}

// WFDB beat annotation codes (WFDB's isqrs).
var beatCodes = map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true, 10: true,
	11: true, 12: true, 13: true, 25: true, 30: true, 31: true, 34: true, 35: true, 38: true, 41: true}

// Annotation is one entry of a WFDB annotation file.
type Annotation struct {
	Sample int64  // sample number, from 0
	Code   int    // annotation code: 1 normal beat (N), 5 ventricular (V), 8 atrial premature (A), 28 rhythm change, ...
	Sub    int    // subtype (SUB)
	Chan   int    // signal number (CHN)
	Num    int    // annotator number (NUM)
	Aux    string // auxiliary text: for a rhythm change, the rhythm, such as "(N", "(AFIB" or "(VFL"
}

// IsBeat reports whether the annotation marks a beat (WFDB's isqrs).
func (a Annotation) IsBeat() bool { return beatCodes[a.Code] }

// ParseAnnotations reads a WFDB annotation file (MIT format): 16-bit
// little-endian words, the code in the top 6 bits and the time increment in
// the low 10; SKIP (59) carries a 32-bit increment, NUM, SUB and CHN (60-62)
// a value for the annotations that follow (SUB and AUX for the one just
// read), AUX (63) a byte string.
func ParseAnnotations(atr []byte) ([]Annotation, error) {
	var out []Annotation
	var t int64
	num, chn := 0, 0
	for i := 0; i+1 < len(atr); {
		w := int(binary.LittleEndian.Uint16(atr[i:]))
		i += 2
		code, inc := w>>10, w&0x3FF
		switch code {
		case 0:
			if inc == 0 {
				return out, nil
			}
			t += int64(inc) // a NOTQRS-free time step
		case 59: // SKIP: the interval follows, high word first
			if i+4 > len(atr) {
				return nil, errors.New("annotations: truncated SKIP")
			}
			hi := int64(binary.LittleEndian.Uint16(atr[i:]))
			lo := int64(binary.LittleEndian.Uint16(atr[i+2:]))
			t += int64(int32(hi<<16 | lo))
			i += 4
		case 60: // NUM
			num = sign10(inc)
			if len(out) > 0 {
				out[len(out)-1].Num = num
			}
		case 61: // SUB
			if len(out) > 0 {
				out[len(out)-1].Sub = sign10(inc)
			}
		case 62: // CHN
			chn = inc
			if len(out) > 0 {
				out[len(out)-1].Chan = chn
			}
		case 63: // AUX: inc bytes, padded to even
			if i+inc > len(atr) {
				return nil, fmt.Errorf("annotations: AUX of %d bytes at byte %d runs past the end (%d bytes)", inc, i, len(atr))
			}
			if len(out) > 0 {
				out[len(out)-1].Aux = strings.TrimRight(string(atr[i:i+inc]), "\x00")
			}
			i += inc + inc%2
		default:
			t += int64(inc)
			if t < 0 {
				return nil, fmt.Errorf("annotations: negative time %d at byte %d", t, i-2)
			}
			out = append(out, Annotation{Sample: t, Code: code, Num: num, Chan: chn})
		}
	}
	return out, nil
}

// sign10 reads a 10-bit two's-complement field.
func sign10(v int) int {
	if v >= 512 {
		return v - 1024
	}
	return v
}

// Beats returns the sample numbers of the beats in a WFDB annotation file
// (see ParseAnnotations).
func Beats(atr []byte) ([]int64, error) {
	all, err := ParseAnnotations(atr)
	if err != nil {
		return nil, err
	}
	var beats []int64
	for _, a := range all {
		if a.IsBeat() {
			beats = append(beats, a.Sample)
		}
	}
	return beats, nil
}
