package edf

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// minAnnotationBytes is the least room the annotation signal gets in each
// data record, so that readers that expect some find it.
const minAnnotationBytes = 64

// Marshal encodes f as a continuous EDF+ file (EDF+C).
func Marshal(f *File) ([]byte, error) {
	var b bytes.Buffer
	if err := Write(&b, f); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteFile writes f to the file at path, replacing it, and syncs it to the
// disk before returning.
func WriteFile(path string, f *File) error {
	data, err := Marshal(f)
	if err != nil {
		return err
	}
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("edf: %w", err)
	}
	if _, err := out.Write(data); err != nil {
		out.Close()
		return fmt.Errorf("edf: %w", err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return fmt.Errorf("edf: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("edf: %w", err)
	}
	return nil
}

// Write encodes f to w as a continuous EDF+ file (EDF+C): a header, then data
// records of RecordDuration each holding every signal's samples and the
// annotations whose onset falls in the record.
func Write(w io.Writer, f *File) error {
	rd := f.recordDuration()
	if err := f.check(rd); err != nil {
		return err
	}
	// the header keeps the start to the second; the rest shifts every time
	start := f.Start.Truncate(time.Second)
	frac := f.Start.Sub(start)
	if start.Year() < 1985 { // unknown, or before what EDF can say: 1 January 1985
		start, frac = time.Date(1985, 1, 1, 0, 0, 0, 0, time.UTC), 0
	}
	spr := make([]int, len(f.Signals))
	nrec := 1
	for i := range f.Signals {
		spr[i], _ = perRecord(f.Signals[i].Rate, rd)
		nrec = max(nrec, (len(f.Signals[i].Samples)+spr[i]-1)/spr[i])
	}
	anns := slices.Clone(f.Annotations)
	slices.SortStableFunc(anns, func(a, b Annotation) int { return cmp.Compare(a.Onset, b.Onset) })
	if len(anns) > 0 {
		nrec = max(nrec, int((frac+anns[len(anns)-1].Onset)/rd)+1)
	}
	// the annotations of each record, as TALs
	tals := make([][]byte, nrec)
	k := 0
	for r := range nrec {
		t := []byte("+" + seconds(frac+time.Duration(r)*rd) + "\x14\x14\x00")
		for ; k < len(anns) && (r == nrec-1 || frac+anns[k].Onset < time.Duration(r+1)*rd); k++ {
			a := anns[k]
			t = append(t, '+')
			t = append(t, seconds(frac+a.Onset)...)
			if a.Duration > 0 {
				t = append(t, 0x15)
				t = append(t, seconds(a.Duration)...)
			}
			t = append(t, 0x14)
			t = append(t, a.Text...)
			t = append(t, 0x14, 0)
		}
		tals[r] = t
	}
	annBytes := minAnnotationBytes
	for _, t := range tals {
		annBytes = max(annBytes, len(t))
	}
	annSamples := (annBytes + 1) / 2
	if annSamples > 99999999 {
		return fmt.Errorf("%w: the annotations of one data record take %d bytes; shorten RecordDuration", ErrInvalid, annBytes)
	}

	ns := len(f.Signals) + 1
	var h bytes.Buffer
	field := func(s string, n int) {
		h.WriteString(s)
		for range n - len(s) {
			h.WriteByte(' ')
		}
	}
	field("0", 8)
	field(orX(f.Patient, "X X X X"), 80)
	year := strings.ToUpper(start.Format("02-Jan-2006"))
	field("Startdate "+year+" "+orX(f.Recording, "X X X"), 80)
	yy := start.Format("02.01.06")
	if start.Year() > 2084 {
		yy = start.Format("02.01.") + "yy"
	}
	field(yy, 8)
	field(start.Format("15.04.05"), 8)
	field(strconv.Itoa(256*(ns+1)), 8)
	field("EDF+C", 44)
	field(strconv.Itoa(nrec), 8)
	recStr, err := number(rd.Seconds())
	if err != nil {
		return fmt.Errorf("%w: record duration %v: %v", ErrInvalid, rd, err)
	}
	field(recStr, 8)
	field(strconv.Itoa(ns), 4)
	type col struct {
		label, transducer, unit, pmin, pmax, dmin, dmax, prefilter, spr string
	}
	cols := make([]col, 0, ns)
	for i := range f.Signals {
		s := &f.Signals[i]
		pmin, err1 := number(s.PhysicalMin)
		pmax, err2 := number(s.PhysicalMax)
		if err := firstError(err1, err2); err != nil {
			return fmt.Errorf("%w: signal %q: physical range: %v", ErrInvalid, s.Label, err)
		}
		cols = append(cols, col{s.Label, s.Transducer, s.Unit, pmin, pmax, strconv.Itoa(s.DigitalMin), strconv.Itoa(s.DigitalMax), s.Prefilter, strconv.Itoa(spr[i])})
	}
	cols = append(cols, col{annotationsLabel, "", "", "-1", "1", "-32768", "32767", "", strconv.Itoa(annSamples)})
	// The signal header holds each field for every signal in turn: all
	// labels, then all transducers, and so on, each of its fixed width.
	for _, f := range []struct {
		get   func(col) string
		width int
	}{
		{func(c col) string { return c.label }, 16},
		{func(c col) string { return c.transducer }, 80},
		{func(c col) string { return c.unit }, 8},
		{func(c col) string { return c.pmin }, 8},
		{func(c col) string { return c.pmax }, 8},
		{func(c col) string { return c.dmin }, 8},
		{func(c col) string { return c.dmax }, 8},
		{func(c col) string { return c.prefilter }, 80},
		{func(c col) string { return c.spr }, 8},
		{func(col) string { return "" }, 32}, // reserved
	} {
		for _, c := range cols {
			field(f.get(c), f.width)
		}
	}
	if _, err := w.Write(h.Bytes()); err != nil {
		return fmt.Errorf("edf: %w", err)
	}

	rec := make([]byte, 0, 2*(annSamples+sum(spr)))
	for r := range nrec {
		rec = rec[:0]
		for i := range f.Signals {
			s := &f.Signals[i]
			for j := r * spr[i]; j < (r+1)*spr[i]; j++ {
				v := 0.0
				switch {
				case j < len(s.Samples):
					v = s.Samples[j]
				case len(s.Samples) > 0:
					v = s.Samples[len(s.Samples)-1]
				}
				rec = binary.LittleEndian.AppendUint16(rec, uint16(int16(s.Digital(v))))
			}
		}
		rec = append(rec, tals[r]...)
		for range 2*annSamples - len(tals[r]) {
			rec = append(rec, 0)
		}
		if _, err := w.Write(rec); err != nil {
			return fmt.Errorf("edf: %w", err)
		}
	}
	return nil
}

// check validates f before writing.
func (f *File) check(rd time.Duration) error {
	if err := ascii("patient identification", f.Patient, 80); err != nil {
		return err
	}
	if err := ascii("recording identification", f.Recording, 80-len("Startdate 02-MAR-2002 ")); err != nil {
		return err
	}
	if len(f.Signals) > 4095 {
		return fmt.Errorf("%w: %d signals; at most 4095 (and the annotations)", ErrInvalid, len(f.Signals))
	}
	for i := range f.Signals {
		s := &f.Signals[i]
		if s.Label == annotationsLabel {
			return fmt.Errorf("%w: signal label %q is reserved for annotations", ErrInvalid, s.Label)
		}
		for _, c := range []struct {
			name, v string
			n       int
		}{{"label", s.Label, 16}, {"transducer", s.Transducer, 80}, {"unit", s.Unit, 8}, {"prefilter", s.Prefilter, 80}} {
			if err := ascii(fmt.Sprintf("signal %d %s", i, c.name), c.v, c.n); err != nil {
				return err
			}
		}
		if s.DigitalMin < -32768 || s.DigitalMax > 32767 || s.DigitalMin >= s.DigitalMax {
			return fmt.Errorf("%w: signal %q: digital range %d to %d; want -32768 <= min < max <= 32767", ErrInvalid, s.Label, s.DigitalMin, s.DigitalMax)
		}
		if !finite(s.PhysicalMin) || !finite(s.PhysicalMax) || s.PhysicalMin == s.PhysicalMax {
			return fmt.Errorf("%w: signal %q: physical range %g to %g; want two different finite values", ErrInvalid, s.Label, s.PhysicalMin, s.PhysicalMax)
		}
		if !(s.Rate > 0) || math.IsInf(s.Rate, 0) {
			return fmt.Errorf("%w: signal %q: rate %g Hz; want a positive rate", ErrInvalid, s.Label, s.Rate)
		}
		if _, err := perRecord(s.Rate, rd); err != nil {
			return fmt.Errorf("signal %q: %w", s.Label, err)
		}
	}
	for i, a := range f.Annotations {
		if a.Onset < 0 || a.Duration < 0 {
			return fmt.Errorf("%w: annotation %d (%q): onset %v and duration %v; neither may be negative", ErrInvalid, i, a.Text, a.Onset, a.Duration)
		}
		if strings.ContainsAny(a.Text, "\x00\x14\x15") {
			return fmt.Errorf("%w: annotation %d (%q): the text may not contain the bytes 0x00, 0x14 or 0x15", ErrInvalid, i, a.Text)
		}
	}
	return nil
}

func ascii(what, s string, n int) error {
	if len(s) > n {
		return fmt.Errorf("%w: %s %q: %d characters; at most %d", ErrInvalid, what, s, len(s), n)
	}
	for _, c := range []byte(s) {
		if c < 0x20 || c > 0x7E {
			return fmt.Errorf("%w: %s %q: only printable ASCII is allowed", ErrInvalid, what, s)
		}
	}
	return nil
}

func orX(s, x string) string {
	if strings.TrimSpace(s) == "" {
		return x
	}
	return s
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func sum(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}

func firstError(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// number formats v in at most 8 characters, without an exponent, keeping
// as many decimals as fit.
func number(v float64) (string, error) {
	if !finite(v) {
		return "", fmt.Errorf("%g is not a number EDF can hold", v)
	}
	for p := 6; p >= 0; p-- {
		s := strconv.FormatFloat(v, 'f', p, 64)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		if s == "-0" {
			s = "0"
		}
		if len(s) <= 8 {
			return s, nil
		}
	}
	return "", fmt.Errorf("%g does not fit in 8 characters", v)
}

// seconds formats d in seconds with up to nine decimals, exactly.
func seconds(d time.Duration) string {
	s := strconv.FormatInt(int64(d/time.Second), 10)
	if ns := int64(d % time.Second); ns != 0 {
		frac := strings.TrimRight(fmt.Sprintf("%09d", ns), "0")
		s += "." + frac
	}
	return s
}
