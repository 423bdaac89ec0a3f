// Package logfile turns the data logger's logs (SBEM files, as
// /Mem/Logbook/byId/{LogId}/Data gives them) into files other tools read:
// CSV, JSON and EDF+. It knows the streams the data logger writes (package
// sbem decodes any SBEM file; this package gives its values a time, a
// unit and a shape).
package logfile

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"

	"senseboard/sbem"
)

// lostPrefix starts the name of the records of a stream's losses, as the
// data logger writes them (logbook.LostPrefix): LostMeasECGmV.
const lostPrefix = "Lost"

// Record is one decoded chunk of a log: one notification of a stream, or
// part of one, or the data logger's account of notifications it lost.
type Record struct {
	// Stream names the logged resource as SBEM does: MeasIMU9, MeasECGmV,
	// MeasHR, TimeDetailed; or, for the notifications of a stream that the
	// data logger lost, Lost and the stream's name (LostMeasECGmV), whose
	// fields are Until and Notifications: that many notifications of the
	// stream were lost after the record's timestamp (the device time of the
	// last one logged before them, or of the start) and before Until (of
	// the first one logged after them, or of the stop).
	Stream string `json:"stream"`
	// Timestamp is the record's device time in ms, when it has one.
	Timestamp *float64 `json:"timestamp,omitempty"`
	// Fields are the record's other values by field name (ArrayAcc.x,
	// Samples, average, rrData, utcTime), in the log's order: one value for
	// a fixed field, one per sample for an array.
	Fields []Field `json:"fields"`
}

// Field is the values of one field of a record.
type Field struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
}

// MarshalJSON writes the values as numbers, and those JSON has no number
// for (NaN, infinities) as null.
func (f Field) MarshalJSON() ([]byte, error) {
	name, err := json.Marshal(f.Name)
	if err != nil {
		return nil, err
	}
	b := append([]byte(`{"name":`), name...)
	b = append(b, `,"values":[`...)
	for i, v := range f.Values {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	return append(b, "]}"...), nil
}

// Decode decodes a log into records.
func Decode(log []byte) ([]Record, error) {
	recs, err := sbem.Decode(log)
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(recs))
	for _, r := range recs {
		if len(r.Values) == 0 {
			continue
		}
		stream, _, _ := strings.Cut(r.Values[0].Path, ".")
		rec := Record{Stream: stream}
		index := map[string]int{}
		for _, v := range r.Values {
			_, field, _ := strings.Cut(v.Path, ".")
			if field == "Timestamp" && rec.Timestamp == nil && !math.IsNaN(v.Value) && !math.IsInf(v.Value, 0) {
				ts := v.Value
				rec.Timestamp = &ts
				continue
			}
			i, ok := index[field]
			if !ok {
				i = len(rec.Fields)
				index[field] = i
				rec.Fields = append(rec.Fields, Field{Name: field})
			}
			rec.Fields[i].Values = append(rec.Fields[i].Values, clean(v.Value))
		}
		out = append(out, rec)
	}
	return out, nil
}

// clean rounds a fraction to 12 significant digits, which drops the noise
// of scaling (0.071 and not 0.07100000000000001 for 71 µV in mV) and keeps
// every digit a logged float32 has; whole numbers stay as they are.
func clean(v float64) float64 {
	if v == math.Trunc(v) || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	return r
}

// CSVHeader is the first line of WriteCSV's output.
const CSVHeader = "record,stream,timestamp_ms,field,sample,value"

// WriteCSV writes a log as CSV, one row per value: the record's number
// (from 1), its stream, its device time in ms (empty when it has none),
// the field, the sample's index within the record (0 for a fixed field)
// and the value (fractions to 12 significant digits), in the units the stream has (m/s², deg/s, µT, mV, bpm, ms,
// K; raw ECG counts). The data logger's losses are rows too: stream
// LostMeasECGmV, say, with the fields Until (ms) and Notifications.
func WriteCSV(w io.Writer, log []byte) error {
	recs, err := Decode(log)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	bw.WriteString(CSVHeader + "\n")
	var line []byte
	for i, r := range recs {
		for _, f := range r.Fields {
			for k, v := range f.Values {
				line = strconv.AppendInt(line[:0], int64(i+1), 10)
				line = append(line, ',')
				line = append(line, r.Stream...)
				line = append(line, ',')
				if r.Timestamp != nil {
					line = strconv.AppendFloat(line, *r.Timestamp, 'f', -1, 64)
				}
				line = append(line, ',')
				line = append(line, f.Name...)
				line = append(line, ',')
				line = strconv.AppendInt(line, int64(k), 10)
				line = append(line, ',')
				line = strconv.AppendFloat(line, v, 'g', -1, 64)
				line = append(line, '\n')
				if _, err := bw.Write(line); err != nil {
					return err
				}
			}
		}
	}
	return bw.Flush()
}

// WriteJSON writes a log as JSON: {"records": [Record...]}.
func WriteJSON(w io.Writer, log []byte) error {
	recs, err := Decode(log)
	if err != nil {
		return err
	}
	if recs == nil {
		recs = []Record{}
	}
	return json.NewEncoder(w).Encode(struct {
		Records []Record `json:"records"`
	}{recs})
}
