package wfdb

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// WFDB annotation codes (WFDB's ecgcodes.h) that senseboard writes.
const (
	CodeNormal      = 1  // N: normal beat
	CodeVentricular = 5  // V: premature ventricular contraction
	CodeAtrial      = 8  // A: atrial premature beat
	CodeNoise       = 14 // ~: change in signal quality
	CodeRhythm      = 28 // +: rhythm change, the rhythm in Aux
)

// EncodeAnnotations encodes annotations (in ascending sample order) in the
// WFDB MIT format that ParseAnnotations reads: each a 16-bit word of code
// and time increment, a SKIP before increments over 1023 samples, SUB, CHN
// and NUM words when they are set or change, AUX words with the text, and
// the end word.
func EncodeAnnotations(anns []Annotation) ([]byte, error) {
	var b []byte
	word := func(code, v int) { b = binary.LittleEndian.AppendUint16(b, uint16(code<<10|v&0x3FF)) }
	var t int64
	num, chn := 0, 0
	for i, a := range anns {
		if a.Code < 1 || a.Code > 49 {
			return nil, fmt.Errorf("annotation %d: code %d; 1 to 49 are annotation codes", i, a.Code)
		}
		if len(a.Aux) > 255 {
			return nil, fmt.Errorf("annotation %d: aux text of %d bytes; at most 255", i, len(a.Aux))
		}
		if a.Sub < -128 || a.Sub > 127 || a.Chan < 0 || a.Chan > 255 || a.Num < -128 || a.Num > 127 {
			return nil, fmt.Errorf("annotation %d: sub %d, chan %d, num %d out of range", i, a.Sub, a.Chan, a.Num)
		}
		d := a.Sample - t
		if d < 0 {
			return nil, fmt.Errorf("annotation %d at sample %d comes before the previous one (%d); annotations are in time order", i, a.Sample, t)
		}
		if d > 1023 {
			if d > math.MaxInt32 {
				return nil, fmt.Errorf("annotation %d: %d samples after the previous one; at most %d", i, d, math.MaxInt32)
			}
			word(59, 0)
			b = binary.LittleEndian.AppendUint16(b, uint16(d>>16))
			b = binary.LittleEndian.AppendUint16(b, uint16(d))
			d = 0
		}
		word(a.Code, int(d))
		t = a.Sample
		if a.Sub != 0 {
			word(61, a.Sub)
		}
		if a.Chan != chn {
			word(62, a.Chan)
			chn = a.Chan
		}
		if a.Num != num {
			word(60, a.Num)
			num = a.Num
		}
		if a.Aux != "" {
			word(63, len(a.Aux))
			b = append(b, a.Aux...)
			if len(a.Aux)%2 == 1 {
				b = append(b, 0)
			}
		}
	}
	return append(b, 0, 0), nil
}

// pack212 packs samples (one signal) in format 212: pairs of 12-bit
// two's-complement values in three bytes, clipped to -2048..2047 (-2048
// marks a missing sample); an odd count is completed with a zero.
func pack212(samples []int) []byte {
	out := make([]byte, 0, (len(samples)+1)/2*3)
	clip := func(v int) int { return max(-2048, min(2047, v)) & 0xFFF }
	for i := 0; i < len(samples); i += 2 {
		s0, s1 := clip(samples[i]), 0
		if i+1 < len(samples) {
			s1 = clip(samples[i+1])
		}
		out = append(out, byte(s0), byte(s0>>8&0x0F|s1>>4&0xF0), byte(s1))
	}
	return out
}

// Record is a one-signal WFDB record to write.
type Record struct {
	Name        string    // record name: letters, digits and underscores
	Rate        float64   // samples per second
	Description string    // the signal's description, such as "ECG"
	Gain        float64   // ADC units per mV; 200 when zero
	Samples     []float64 // mV; NaN for a missing sample
	Annotations []Annotation
	Comments    []string // header comment lines, without '#'
}

// Write writes rec as dir/NAME.hea, NAME.dat (format 212) and, when it has
// annotations, NAME.atr, each synced to the disk.
func Write(dir string, rec *Record) error {
	if rec.Name == "" || strings.Trim(rec.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" {
		return fmt.Errorf("wfdb: record name %q: letters, digits and underscores", rec.Name)
	}
	if !(rec.Rate > 0 && rec.Rate < 1e6) {
		return fmt.Errorf("wfdb: rate %g Hz: between 0 and 1000000", rec.Rate)
	}
	gain := rec.Gain
	if gain == 0 {
		gain = 200
	}
	adu := make([]int, len(rec.Samples))
	sum := 0
	for i, v := range rec.Samples {
		if math.IsNaN(v) {
			adu[i] = -2048
		} else {
			adu[i] = max(-2047, min(2047, int(math.Round(v*gain))))
		}
		sum += adu[i]
	}
	dat := pack212(adu) // -2048 marks a missing sample
	first := 0
	if len(adu) > 0 {
		first = adu[0]
	}
	desc := rec.Description
	if desc == "" {
		desc = "ECG"
	}
	var h strings.Builder
	fmt.Fprintf(&h, "%s 1 %s %d\n", rec.Name, strconv.FormatFloat(rec.Rate, 'f', -1, 64), len(adu))
	fmt.Fprintf(&h, "%s.dat 212 %s(0)/mV 12 0 %d %d 0 %s\n", rec.Name, strconv.FormatFloat(gain, 'f', -1, 64), first, int16(sum), desc)
	for _, c := range rec.Comments {
		fmt.Fprintf(&h, "# %s\n", strings.ReplaceAll(c, "\n", " "))
	}
	if err := writeSynced(filepath.Join(dir, rec.Name+".hea"), []byte(h.String())); err != nil {
		return err
	}
	if err := writeSynced(filepath.Join(dir, rec.Name+".dat"), dat); err != nil {
		return err
	}
	if len(rec.Annotations) > 0 {
		atr, err := EncodeAnnotations(rec.Annotations)
		if err != nil {
			return fmt.Errorf("wfdb: %w", err)
		}
		if err := writeSynced(filepath.Join(dir, rec.Name+".atr"), atr); err != nil {
			return err
		}
	}
	return nil
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("wfdb: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("wfdb: %w", err)
	}
	return nil
}
