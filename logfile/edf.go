package logfile

import (
	"fmt"
	"strings"
	"time"

	"senseboard/edf"
	"senseboard/sensor"
)

// EDF converts a log (an SBEM file as the data logger writes it) to an EDF+
// recording with edf.Builder: one signal per sampled quantity, labelled and
// in the units edf.SensorChannel gives (ECG in mV; Acc, Gyro, Magn axes in
// m/s², deg/s, µT), at the stream's rate measured from its timestamps
// (edf.Stream.FitRate);
// a log names no rate, so a stream needs two records at different device
// times, and a stream of a single record (or of records all at one time)
// is refused with edf.ErrInvalid naming it, rather than given a rate
// guessed; heart rate, RR intervals and temperature as annotations, and so
// the data logger's losses (its Lost records: "ECGmV: 63 notifications lost
// by the data logger in 2.048 s", at the last notification logged before
// them). The start is
// the log's UTC anchor (its /Time/Detailed record) when it has one.
// Streams that start later than the first are padded at their start with
// their first sample, and samples missing where a stream's timestamps jump
// are filled with the last one and annotated.
func EDF(log []byte) (*edf.File, error) {
	recs, err := Decode(log)
	if err != nil {
		return nil, err
	}
	var b edf.Builder
	anchored := false
	var lastTS float64
	var rows []float64
	for i, r := range recs {
		switch r.Stream {
		case "TimeDetailed":
			b.Anchor(time.UnixMicro(int64(r.value("utcTime"))).UTC(), r.value("relativeTime"))
			anchored = true
			continue
		case "MeasHR":
			text := fmt.Sprintf("HR %.1f bpm", r.value("average"))
			for _, rr := range r.values("rrData") {
				text += fmt.Sprintf(" RR %.0f ms", rr)
			}
			b.AnnotateAt(lastTS, text)
			continue
		case "MeasTemp":
			b.AnnotateAt(r.timestamp(), fmt.Sprintf("Temp %.2f K", r.value("Measurement")))
			continue
		}
		if lost, ok := strings.CutPrefix(r.Stream, lostPrefix); ok {
			from := r.timestamp()
			b.AnnotateAt(from, fmt.Sprintf("%s: %.0f notifications lost by the data logger in %.3f s",
				strings.TrimPrefix(lost, "Meas"), r.value("Notifications"), (r.value("Until")-from)/1000))
			continue
		}
		if r.Timestamp == nil || len(r.Fields) == 0 {
			continue
		}
		lastTS = *r.Timestamp
		s, isNew := b.Stream(r.Stream)
		scale := 1.0
		if r.Stream == "MeasECG" { // raw counts
			scale = sensor.ECGUnit
		}
		if isNew {
			s.Name, s.Transducer = strings.TrimPrefix(r.Stream, "Meas"), r.Stream
			for _, f := range r.Fields {
				s.Channels = append(s.Channels, channelOf(r.Stream, f.Name))
			}
		}
		if len(r.Fields) != len(s.Channels) {
			return nil, fmt.Errorf("%w: record %d of %s has %d fields; its first had %d", edf.ErrInvalid, i+1, r.Stream, len(r.Fields), len(s.Channels))
		}
		n := len(r.Fields[0].Values)
		rows = rows[:0]
		for k := range n {
			for _, f := range r.Fields {
				if len(f.Values) != n {
					return nil, fmt.Errorf("%w: record %d of %s: field %s has %d values, %s has %d; want as many", edf.ErrInvalid, i+1, r.Stream, f.Name, len(f.Values), r.Fields[0].Name, n)
				}
				rows = append(rows, f.Values[k]*scale)
			}
		}
		if err := s.Add(*r.Timestamp, rows); err != nil {
			return nil, err
		}
	}
	for _, s := range b.Streams() {
		if !s.FitRate() {
			return nil, fmt.Errorf("%w: log: stream %s: %d record(s), none later than the first; a log names no sample rate, so the export measures a stream's rate from the time between its records, and needs two at different device times",
				edf.ErrInvalid, s.Transducer, s.Adds())
		}
	}
	f, err := b.File()
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	if !anchored {
		f.Start = time.Unix(0, 0).UTC()
	}
	return f, nil
}

// value returns the first value of the record's field name, 0 when it has
// none.
func (r *Record) value(name string) float64 {
	if v := r.values(name); len(v) > 0 {
		return v[0]
	}
	return 0
}

// values returns the values of the record's field name.
func (r *Record) values(name string) []float64 {
	for _, f := range r.Fields {
		if f.Name == name {
			return f.Values
		}
	}
	return nil
}

// timestamp returns the record's device time in ms, 0 when it has none.
func (r *Record) timestamp() float64 {
	if r.Timestamp == nil {
		return 0
	}
	return *r.Timestamp
}

// channelOf names the signal of a field of a stream: ECG for the ECG
// streams, and the axes of ArrayAcc, ArrayGyro and ArrayMagn.
func channelOf(stream, field string) edf.Channel {
	name := strings.TrimPrefix(stream, "Meas")
	if strings.HasPrefix(name, "ECG") {
		return edf.SensorChannel(name, "ECG", "")
	}
	array, axis, _ := strings.Cut(field, ".")
	return edf.SensorChannel(name, strings.TrimPrefix(array, "Array"), axis)
}
