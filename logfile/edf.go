package logfile

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"senseboard/edf"
	"senseboard/sbem"
	"senseboard/sensor"
)

// familyRates are the sample rates of the family's streams; a log's
// measured rate is taken as the nearest of them within 5 %.
var familyRates = []float64{13, 26, 52, 104, 125, 128, 200, 208, 250, 256, 416, 500, 512, 833, 1666}

// maxLate is how much later than the first a stream of a log may start in
// its EDF+ export (the start is padded with its first sample), and
// maxRate the highest rate a log's stream may have.
const (
	maxLate = 10 * time.Minute
	maxRate = 10000.0
)

type series struct {
	stream, label, unit string
	scale               float64
	firstTS, lastTS     float64
	lastN               int
	samples             []float64
	order               int
}

// EDF converts a log (an SBEM file as the data logger writes it) to an EDF+
// recording: one signal per sampled quantity (ECG in mV; Acc, Gyro, Magn
// axes in m/s², dps, µT), at the stream's rate measured from its
// timestamps; heart rate, RR intervals and temperature as annotations. The
// start is the log's UTC anchor (its /Time/Detailed record) when it has
// one. Streams that start later than the first are padded at their start
// with their first sample.
func EDF(log []byte) (*edf.File, error) {
	recs, err := sbem.Decode(log)
	if err != nil {
		return nil, err
	}
	sig := map[string]*series{}
	var utcAnchor, relAnchor float64
	haveAnchor := false
	var lastTS float64
	type note struct {
		at   float64
		text string
	}
	var notes []note
	for _, r := range recs {
		if len(r.Values) == 0 {
			continue
		}
		stream, _, _ := strings.Cut(r.Values[0].Path, ".")
		vals := map[string]float64{}
		var order []string
		groups := map[string][]float64{}
		for _, v := range r.Values {
			_, field, _ := strings.Cut(v.Path, ".")
			if _, seen := groups[field]; !seen {
				order = append(order, field)
			}
			groups[field] = append(groups[field], v.Value)
			vals[field] = v.Value
		}
		switch stream {
		case "TimeDetailed":
			utcAnchor, relAnchor, haveAnchor = vals["utcTime"], vals["relativeTime"], true
			continue
		case "MeasHR":
			text := fmt.Sprintf("HR %.1f bpm", vals["average"])
			for _, rr := range groups["rrData"] {
				text += fmt.Sprintf(" RR %.0f ms", rr)
			}
			notes = append(notes, note{lastTS, text})
			continue
		case "MeasTemp":
			notes = append(notes, note{vals["Timestamp"], fmt.Sprintf("Temp %.2f K", vals["Measurement"])})
			continue
		}
		ts, ok := vals["Timestamp"]
		if !ok {
			continue
		}
		lastTS = ts
		for _, field := range order {
			if field == "Timestamp" {
				continue
			}
			key := stream + "." + field
			s := sig[key]
			if s == nil {
				s = &series{stream: stream, firstTS: ts, order: len(sig)}
				s.label, s.unit, s.scale = labelOf(stream, field)
				sig[key] = s
			}
			n := len(groups[field])
			s.lastTS, s.lastN = ts, n
			for _, v := range groups[field] {
				s.samples = append(s.samples, v*s.scale)
			}
		}
	}
	if len(sig) == 0 {
		return nil, fmt.Errorf("%w: the log has no sampled stream", edf.ErrInvalid)
	}
	list := make([]*series, 0, len(sig))
	for _, s := range sig {
		list = append(list, s)
	}
	slices.SortFunc(list, func(a, b *series) int { return a.order - b.order })
	start := math.Inf(1)
	for _, s := range list {
		start = min(start, s.firstTS)
	}
	f := &edf.File{Recording: "X X senseboard", Start: time.Unix(0, 0).UTC()}
	if haveAnchor {
		f.Start = time.UnixMicro(int64(utcAnchor + (start-relAnchor)*1000)).UTC()
	}
	for _, s := range list {
		rate := rateOf(s)
		pad := int(math.Round((s.firstTS - start) / 1000 * rate))
		if late := time.Duration((s.firstTS - start) * float64(time.Millisecond)); late > maxLate || rate > maxRate {
			return nil, fmt.Errorf("%w: stream %s starts %v after the first at %g Hz; an EDF+ file has one time line: at most %v later, at most %g Hz",
				edf.ErrInvalid, s.stream, late, rate, maxLate, maxRate)
		}
		samples := make([]float64, 0, pad+len(s.samples))
		for range pad {
			samples = append(samples, s.samples[0])
		}
		samples = append(samples, s.samples...)
		sig := edf.Signal{Label: s.label, Unit: s.unit, Transducer: s.stream, Rate: rate, Samples: samples}
		sig.Fit()
		f.Signals = append(f.Signals, sig)
	}
	for _, n := range notes {
		at := max(0, n.at-start)
		f.Annotations = append(f.Annotations, edf.Annotation{Onset: time.Duration(at * float64(time.Millisecond)), Text: n.text})
	}
	return f, nil
}

func rateOf(s *series) float64 {
	rate := 0.0
	if span := s.lastTS - s.firstTS; span > 0 {
		rate = float64(len(s.samples)-s.lastN) / (span / 1000)
	}
	best := familyRates[0]
	for _, r := range familyRates {
		if math.Abs(r-rate) < math.Abs(best-rate) {
			best = r
		}
	}
	if math.Abs(best-rate) <= best*0.05 || rate == 0 {
		return best
	}
	return math.Round(rate)
}

// labelOf names a signal: "ECG", "Acc x", "IMU9 Gyro z", with its unit and
// the factor from the logged value to that unit.
func labelOf(stream, field string) (label, unit string, scale float64) {
	switch stream {
	case "MeasECG":
		return "ECG", "mV", sensor.ECGUnit
	case "MeasECGmV":
		return "ECG", "mV", 1
	}
	array, axis, _ := strings.Cut(field, ".")
	kind := strings.TrimPrefix(array, "Array")
	unit = map[string]string{"Acc": "m/s2", "Gyro": "dps", "Magn": "uT"}[kind]
	prefix := strings.TrimPrefix(stream, "Meas")
	if prefix == kind {
		return kind + " " + axis, unit, 1
	}
	return prefix + " " + kind + " " + axis, unit, 1
}
