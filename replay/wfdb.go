package replay

import (
	"fmt"
	"math"
	"strings"
	"time"

	"senseboard/wfdb"
)

// WFDB builds a recording from a header, its signal file and optionally its
// annotations (nil for none). The first signal is the ECG; the second, when
// the record has one in millivolts in the same file, is the ECG's second
// lead (the ECG series' second axis), which a Source may offer the heart
// rate (Source.SetHRLeads). The header's record name is taken as it is:
// Load, which reads the header from its file, checks it against the
// file's name.
func WFDB(name string, header, dat, atr []byte) (*Recording, error) {
	h, err := parseHeader(name, header)
	if err != nil {
		return nil, err
	}
	return wfdbRecord(name, h, dat, atr, -1)
}

// parseHeader parses the header of the record name.
func parseHeader(name string, header []byte) (*wfdb.Header, error) {
	h, err := wfdb.ParseHeader(header)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return h, nil
}

// wfdbRecord builds a recording of the record of header h whose ECG is
// the record's signal number lead, or, for lead -1, the leads WFDB reads.
func wfdbRecord(name string, h *wfdb.Header, dat, atr []byte, lead int) (*Recording, error) {
	leads := []int{lead}
	switch {
	case lead < 0:
		leads = []int{0}
		if len(h.Signals) > 1 && h.Signals[1].File == h.Signals[0].File && strings.EqualFold(h.Signals[1].Units, "mV") {
			leads = append(leads, 1)
		}
	case lead >= len(h.Signals):
		return nil, fmt.Errorf("%s: signal %d of %d: %w", name, lead, len(h.Signals), wfdb.ErrSignalNumber)
	}
	return wfdbLeads(name, h, dat, atr, leads)
}

// wfdbLeads builds a recording whose ECG has the record's signals leads
// (of the file dat) as its axes.
func wfdbLeads(name string, h *wfdb.Header, dat, atr []byte, leads []int) (*Recording, error) {
	s := &Series{Channel: ECG, Rate: h.Rate}
	for _, lead := range leads {
		sig := h.Signals[lead]
		adu, err := h.Decode(dat, lead)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if s.T == nil {
			s.T = make([]time.Duration, len(adu))
			for i := range adu {
				s.T[i] = time.Duration(float64(i) / h.Rate * float64(time.Second))
			}
		}
		x := make([]float64, len(s.T))
		for i := range x {
			switch {
			case i >= len(adu), adu[i] == sig.Invalid():
				x[i] = math.NaN()
			default:
				x[i] = float64(adu[i]-sig.Baseline) / sig.Gain
			}
		}
		s.Axes = append(s.Axes, x)
	}
	r := &Recording{Name: name}
	r.Series[ECG] = s
	if atr != nil {
		beats, err := wfdb.Beats(atr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, b := range beats {
			r.Beats = append(r.Beats, time.Duration(float64(b)/h.Rate*float64(time.Second)))
		}
	}
	if err := r.finish(); err != nil {
		return nil, err
	}
	return r, nil
}
