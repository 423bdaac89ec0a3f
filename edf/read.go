package edf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Unmarshal decodes an EDF or EDF+ file. Signals come back with their
// physical values; the annotations of every "EDF Annotations" signal come
// back as Annotations in the order of the file (onset order for files Write
// made; the records' time-keeping entries excepted), with their onsets from
// Start. Errors wrap ErrFormat and name the field.
func Unmarshal(data []byte) (*File, error) {
	if len(data) < 256 {
		return nil, fmt.Errorf("%w: %d bytes; the header alone takes 256", ErrFormat, len(data))
	}
	str := func(off, n int) string { return strings.TrimRight(string(data[off:off+n]), " ") }
	if v := str(0, 8); v != "0" {
		return nil, fmt.Errorf("%w: version %q; want \"0\"", ErrFormat, v)
	}
	for i, c := range data[:256] {
		if c < 0x20 || c > 0x7E {
			return nil, fmt.Errorf("%w: header byte %d is 0x%02x; the header is printable ASCII", ErrFormat, i, c)
		}
	}
	f := &File{Patient: str(8, 80), Recording: str(88, 80)}
	if rest, ok := strings.CutPrefix(f.Recording, "Startdate "); ok {
		if _, after, ok := strings.Cut(rest, " "); ok {
			f.Recording = after
		} else {
			f.Recording = ""
		}
	}
	start, err := parseStart(str(168, 8), str(176, 8), str(88, 80))
	if err != nil {
		return nil, err
	}
	hdrBytes, err := strconv.Atoi(strings.TrimSpace(str(184, 8)))
	if err != nil {
		return nil, fmt.Errorf("%w: header size %q: not a number", ErrFormat, str(184, 8))
	}
	nrec, err := strconv.Atoi(strings.TrimSpace(str(236, 8)))
	if err != nil || nrec < -1 {
		return nil, fmt.Errorf("%w: number of data records %q: want a count or -1", ErrFormat, str(236, 8))
	}
	recSec, err := strconv.ParseFloat(strings.TrimSpace(str(244, 8)), 64)
	if err != nil || recSec < 0 || recSec > 1e6 {
		return nil, fmt.Errorf("%w: data record duration %q: want seconds from 0 to 1000000", ErrFormat, str(244, 8))
	}
	ns, err := strconv.Atoi(strings.TrimSpace(str(252, 4)))
	if err != nil || ns < 1 || ns > 4096 {
		return nil, fmt.Errorf("%w: number of signals %q: want 1 to 4096", ErrFormat, str(252, 4))
	}
	if hdrBytes != 256*(ns+1) {
		return nil, fmt.Errorf("%w: header size %d; %d signals take %d", ErrFormat, hdrBytes, ns, 256*(ns+1))
	}
	if len(data) < hdrBytes {
		return nil, fmt.Errorf("%w: %d bytes; the header of %d signals takes %d", ErrFormat, len(data), ns, hdrBytes)
	}
	for i, c := range data[256:hdrBytes] {
		if c < 0x20 || c > 0x7E {
			return nil, fmt.Errorf("%w: header byte %d is 0x%02x; the header is printable ASCII", ErrFormat, 256+i, c)
		}
	}
	// the signal header: each field for every signal in turn
	off := 256
	next := func(n int) []string {
		v := make([]string, ns)
		for i := range v {
			v[i] = str(off, n)
			off += n
		}
		return v
	}
	labels, transducers, units := next(16), next(80), next(8)
	pmins, pmaxs, dmins, dmaxs := next(8), next(8), next(8), next(8)
	prefilters, sprs := next(80), next(8)
	type sig struct {
		s     Signal
		spr   int
		annot bool
	}
	sigs := make([]sig, ns)
	recBytes := 0
	for i := range sigs {
		s := &sigs[i]
		s.s = Signal{Label: labels[i], Transducer: transducers[i], Unit: units[i], Prefilter: prefilters[i]}
		s.annot = labels[i] == annotationsLabel
		num := func(name, v string) (float64, error) {
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || !finite(x) {
				return 0, fmt.Errorf("%w: signal %d (%q): %s %q: not a number", ErrFormat, i, labels[i], name, v)
			}
			return x, nil
		}
		if s.s.PhysicalMin, err = num("physical minimum", pmins[i]); err != nil {
			return nil, err
		}
		if s.s.PhysicalMax, err = num("physical maximum", pmaxs[i]); err != nil {
			return nil, err
		}
		dmin, err := num("digital minimum", dmins[i])
		if err != nil {
			return nil, err
		}
		dmax, err := num("digital maximum", dmaxs[i])
		if err != nil {
			return nil, err
		}
		if dmin < -32768 || dmax > 32767 || dmin >= dmax || dmin != math.Trunc(dmin) || dmax != math.Trunc(dmax) {
			return nil, fmt.Errorf("%w: signal %d (%q): digital range %q to %q; want integers -32768 <= min < max <= 32767", ErrFormat, i, labels[i], dmins[i], dmaxs[i])
		}
		s.s.DigitalMin, s.s.DigitalMax = int(dmin), int(dmax)
		if !s.annot && s.s.PhysicalMin == s.s.PhysicalMax {
			return nil, fmt.Errorf("%w: signal %d (%q): physical minimum and maximum are both %g", ErrFormat, i, labels[i], s.s.PhysicalMin)
		}
		if s.spr, err = strconv.Atoi(strings.TrimSpace(sprs[i])); err != nil || s.spr < 1 || s.spr > 1<<24 {
			return nil, fmt.Errorf("%w: signal %d (%q): samples per data record %q: want 1 to %d", ErrFormat, i, labels[i], sprs[i], 1<<24)
		}
		if recSec > 0 {
			s.s.Rate = float64(s.spr) / recSec
		}
		recBytes += 2 * s.spr
	}
	body := data[hdrBytes:]
	if nrec == -1 {
		nrec = len(body) / recBytes
	}
	if len(body)/recBytes < nrec {
		return nil, fmt.Errorf("%w: %d data records of %d bytes announced, %d bytes present", ErrFormat, nrec, recBytes, len(body))
	}
	if recSec > 0 {
		f.RecordDuration = time.Duration(math.Round(recSec * float64(time.Second)))
	}
	for i := range sigs {
		if !sigs[i].annot {
			sigs[i].s.Samples = make([]float64, 0, nrec*sigs[i].spr)
		}
	}
	var firstKeep time.Duration
	haveKeep := false
	for r := range nrec {
		rec := body[r*recBytes : (r+1)*recBytes]
		p := 0
		for i := range sigs {
			s := &sigs[i]
			b := rec[p : p+2*s.spr]
			p += 2 * s.spr
			if s.annot {
				keep, anns, err := parseTALs(b)
				if err != nil {
					return nil, fmt.Errorf("data record %d: %w", r, err)
				}
				if r == 0 && keep != nil && !haveKeep {
					firstKeep, haveKeep = *keep, true
				}
				f.Annotations = append(f.Annotations, anns...)
				continue
			}
			for k := 0; k < len(b); k += 2 {
				s.s.Samples = append(s.s.Samples, s.s.Physical(int(int16(binary.LittleEndian.Uint16(b[k:])))))
			}
		}
	}
	// a first record that starts within a second of the header's start time
	// carries the start's fraction of a second
	if haveKeep && firstKeep > 0 && firstKeep < time.Second {
		start = start.Add(firstKeep)
		for i := range f.Annotations {
			f.Annotations[i].Onset -= firstKeep
		}
	}
	f.Start = start
	for _, s := range sigs {
		if !s.annot {
			f.Signals = append(f.Signals, s.s)
		}
	}
	return f, nil
}

// parseStart reads the header's start date and time; the EDF+ recording
// field's "Startdate dd-MMM-yyyy" gives the full year when present.
func parseStart(date, clock, recording string) (time.Time, error) {
	var dd, mm, yy, hh, mi, ss int
	if _, err := fmt.Sscanf(date, "%2d.%2d.%2d", &dd, &mm, &yy); err != nil && !strings.HasSuffix(date, "yy") {
		return time.Time{}, fmt.Errorf("%w: start date %q: want dd.mm.yy", ErrFormat, date)
	}
	if _, err := fmt.Sscanf(clock, "%2d.%2d.%2d", &hh, &mi, &ss); err != nil {
		return time.Time{}, fmt.Errorf("%w: start time %q: want hh.mm.ss", ErrFormat, clock)
	}
	year := 1900 + yy
	if yy < 85 {
		year = 2000 + yy
	}
	if rest, ok := strings.CutPrefix(recording, "Startdate "); ok {
		d, _, _ := strings.Cut(rest, " ")
		if t, err := time.Parse("02-Jan-2006", titleMonth(d)); err == nil {
			year, mm, dd = t.Year(), int(t.Month()), t.Day()
		}
	}
	if dd < 1 || dd > 31 || mm < 1 || mm > 12 || hh > 23 || mi > 59 || ss > 59 || hh < 0 || mi < 0 || ss < 0 {
		return time.Time{}, fmt.Errorf("%w: start %q %q: no such date and time", ErrFormat, date, clock)
	}
	return time.Date(year, time.Month(mm), dd, hh, mi, ss, 0, time.UTC), nil
}

// titleMonth turns "02-MAR-2002" into "02-Mar-2002" for time.Parse.
func titleMonth(d string) string {
	if len(d) == 11 {
		return d[:4] + strings.ToLower(d[4:6]) + d[6:]
	}
	return d
}

// parseTALs reads the time-stamped annotation lists of one record's
// annotation signal: "+onset[\x15duration]\x14text\x14...\x00", padded with
// zero bytes. It returns the record's time-keeping onset (the first TAL's,
// with no text) and the annotations.
func parseTALs(b []byte) (*time.Duration, []Annotation, error) {
	var keep *time.Duration
	var out []Annotation
	first := true
	for len(b) > 0 {
		if b[0] == 0 {
			b = b[1:]
			continue
		}
		end := bytes.IndexByte(b, 0)
		if end < 0 {
			return nil, nil, fmt.Errorf("%w: an annotation list is not ended by a zero byte", ErrFormat)
		}
		tal := b[:end]
		b = b[end+1:]
		parts := bytes.Split(tal, []byte{0x14})
		if len(parts) < 2 || len(parts[len(parts)-1]) != 0 {
			return nil, nil, fmt.Errorf("%w: annotation list %q: want onset, 0x14, texts each ended by 0x14", ErrFormat, tal)
		}
		ts, ds, hasDur := bytes.Cut(parts[0], []byte{0x15})
		onset, err := parseSeconds(string(ts), true)
		if err != nil {
			return nil, nil, err
		}
		var dur time.Duration
		if hasDur {
			if dur, err = parseSeconds(string(ds), false); err != nil {
				return nil, nil, err
			}
		}
		texts := parts[1 : len(parts)-1]
		if first && len(texts) == 1 && len(texts[0]) == 0 {
			keep = &onset
		}
		first = false
		for _, t := range texts {
			if len(t) > 0 {
				out = append(out, Annotation{Onset: onset, Duration: dur, Text: string(t)})
			}
		}
	}
	return keep, out, nil
}

// parseSeconds reads "+12.345" (signed when signed) into a duration.
func parseSeconds(s string, signed bool) (time.Duration, error) {
	orig := s
	neg := false
	if signed {
		if s == "" || (s[0] != '+' && s[0] != '-') {
			return 0, fmt.Errorf("%w: annotation onset %q: want + or - then seconds", ErrFormat, orig)
		}
		neg, s = s[0] == '-', s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(whole) > 11 || len(frac) > 9 || strings.Trim(whole, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" {
		return 0, fmt.Errorf("%w: annotation time %q: want seconds, up to 11 digits and 9 decimals", ErrFormat, orig)
	}
	w, _ := strconv.ParseInt(whole, 10, 64)
	d := time.Duration(w) * time.Second
	if frac != "" {
		n, _ := strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		d += time.Duration(n)
	}
	if neg {
		d = -d
	}
	return d, nil
}
