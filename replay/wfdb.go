package replay

import (
	"fmt"
	"math"
	"time"

	"senseboard/wfdb"
)

// WFDB builds a recording from a header, its signal file and optionally its
// annotations (nil for none). The first signal is the ECG.
func WFDB(name string, header, dat, atr []byte) (*Recording, error) {
	return wfdbSignal(name, header, dat, atr, 0)
}

// wfdbSignal builds a recording of the record's signal number lead as its
// ECG.
func wfdbSignal(name string, header, dat, atr []byte, lead int) (*Recording, error) {
	h, err := wfdb.ParseHeader(header)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if lead >= len(h.Signals) {
		return nil, fmt.Errorf("%s: signal %d of %d", name, lead, len(h.Signals))
	}
	sig := h.Signals[lead]
	adu, err := h.Decode(dat, lead)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s := &Series{Channel: ECG, Rate: h.Rate, T: make([]time.Duration, len(adu)), Axes: [][]float64{make([]float64, len(adu))}}
	for i, v := range adu {
		s.T[i] = time.Duration(float64(i) / h.Rate * float64(time.Second))
		if v == sig.Invalid() {
			s.Axes[0][i] = math.NaN()
			continue
		}
		s.Axes[0][i] = float64(v-sig.Baseline) / sig.Gain
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
