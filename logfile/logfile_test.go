package logfile_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"senseboard/edf"
	"senseboard/logbook"
	"senseboard/logfile"
	"senseboard/sbem"
)

// CSV and JSON carry every value of the log, with its stream, field and
// record time.
func TestCSVAndJSON(t *testing.T) {
	log := recordLog(t, 5, "/Meas/Acc/52", "/Meas/HR", "/Time/Detailed")
	recs, err := sbem.Decode(log)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{} // values by stream.field, Timestamps left out
	for _, r := range recs {
		for i, v := range r.Values {
			if i == 0 && v.Path[len(v.Path)-len(".Timestamp"):] == ".Timestamp" {
				continue
			}
			want[v.Path]++
		}
	}
	if want["MeasAcc.ArrayAcc.x"] < 100 || want["MeasHR.average"] == 0 || want["TimeDetailed.utcTime"] != 1 {
		t.Fatalf("the log holds %v", want)
	}

	var b bytes.Buffer
	if err := logfile.WriteCSV(&b, log); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := rows[0]; len(got) != 6 || got[0] != "record" || got[5] != "value" {
		t.Fatalf("header %q, want %s", got, logfile.CSVHeader)
	}
	got := map[string]int{}
	for _, row := range rows[1:] {
		got[row[1]+"."+row[3]]++
		if row[1] == "MeasAcc" {
			if _, err := strconv.ParseFloat(row[2], 64); err != nil {
				t.Fatalf("row %q: timestamp %v", row, err)
			}
		}
		if _, err := strconv.ParseFloat(row[5], 64); err != nil {
			t.Fatalf("row %q: value %v", row, err)
		}
	}
	if !equalCounts(got, want) {
		t.Errorf("CSV values %v, want %v", got, want)
	}

	b.Reset()
	if err := logfile.WriteJSON(&b, log); err != nil {
		t.Fatal(err)
	}
	var doc struct{ Records []logfile.Record }
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	got = map[string]int{}
	for _, r := range doc.Records {
		if r.Stream == "MeasAcc" && r.Timestamp == nil {
			t.Fatalf("an Acc record without its timestamp: %+v", r)
		}
		for _, f := range r.Fields {
			got[r.Stream+"."+f.Name] += len(f.Values)
		}
	}
	if !equalCounts(got, want) {
		t.Errorf("JSON values %v, want %v", got, want)
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// What is not a log is refused with the SBEM reader's error, by every export.
func TestNotALog(t *testing.T) {
	for _, tt := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, sbem.ErrHeader},
		{"text", []byte("hello, world"), sbem.ErrHeader},
		{"torn", append([]byte(sbem.Header), 5, 9, 1), sbem.ErrTruncated},
		{"no descriptor", append([]byte(sbem.Header), 5, 1, 1), sbem.ErrChunk},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			for name, err := range map[string]error{
				"csv":  logfile.WriteCSV(&b, tt.data),
				"json": logfile.WriteJSON(&b, tt.data),
			} {
				if !errors.Is(err, tt.want) {
					t.Errorf("%s: %v, want %v", name, err, tt.want)
				}
			}
			if _, err := logfile.EDF(tt.data); !errors.Is(err, tt.want) {
				t.Errorf("edf: %v, want %v", err, tt.want)
			}
		})
	}
}

// FuzzDecode: any bytes give records or an error, never a panic, and CSV,
// JSON and EDF+ agree on whether the bytes are a log.
func FuzzDecode(f *testing.F) {
	w := sbem.NewWriter()
	l := &sbem.Layout{Stream: "MeasTemp", Fixed: []sbem.Field{{Name: "Measurement", Format: sbem.Float32}, {Name: "Timestamp", Format: sbem.Uint32}}}
	one, _ := w.AppendRecord([]byte(sbem.Header), l, 0, []byte{0, 0, 0x99, 0x43, 1, 0, 0, 0})
	f.Add(one)
	f.Add([]byte(sbem.Header))
	f.Add([]byte("SBEM0112\x00\x05\x01\x00<PTH>"))
	f.Add(lossLog(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := logfile.Decode(data)
		var b, j bytes.Buffer
		cerr := logfile.WriteCSV(&b, data)
		jerr := logfile.WriteJSON(&j, data)
		if (err == nil) != (cerr == nil) || (err == nil) != (jerr == nil) {
			t.Fatalf("decode %v, csv %v, json %v", err, cerr, jerr)
		}
		if err == nil {
			n := 0
			for _, r := range recs {
				for _, f := range r.Fields {
					n += len(f.Values)
				}
			}
			if rows := bytes.Count(b.Bytes(), []byte("\n")) - 1; rows != n {
				t.Fatalf("%d CSV rows for %d values", rows, n)
			}
			logfile.EDF(data)
		}
	})
}

// Values JSON has no number for are null; CSV writes them as Go does.
func TestNonFiniteValues(t *testing.T) {
	w := sbem.NewWriter()
	l := &sbem.Layout{Stream: "MeasTemp", Fixed: []sbem.Field{{Name: "Measurement", Format: sbem.Float32}, {Name: "Timestamp", Format: sbem.Uint32}}}
	log, err := w.AppendRecord([]byte(sbem.Header), l, 0, []byte{0, 0, 0xc0, 0x7f, 7, 0, 0, 0}) // NaN at 7 ms
	if err != nil {
		t.Fatal(err)
	}
	var j, c bytes.Buffer
	if err := logfile.WriteJSON(&j, log); err != nil {
		t.Fatal(err)
	}
	if want := `{"records":[{"stream":"MeasTemp","timestamp":7,"fields":[{"name":"Measurement","values":[null]}]}]}` + "\n"; j.String() != want {
		t.Errorf("JSON %s, want %s", j.String(), want)
	}
	if err := logfile.WriteCSV(&c, log); err != nil || !strings.HasSuffix(c.String(), "1,MeasTemp,7,Measurement,0,NaN\n") {
		t.Errorf("CSV %q, %v", c.String(), err)
	}
}

// xyzLayout is the layout of a stream of one array of x, y, z.
func xyzLayout(stream, array string) *sbem.Layout {
	xyz := []sbem.Field{{Name: "x", Format: sbem.Float32}, {Name: "y", Format: sbem.Float32}, {Name: "z", Format: sbem.Float32}}
	return &sbem.Layout{Stream: stream, Fixed: []sbem.Field{{Name: "Timestamp", Format: sbem.Uint32}}, Arrays: []sbem.Array{{Name: array, Fields: xyz}}}
}

// xyzRecord is a record of an xyzLayout: n samples of zeros at device
// time ms.
func xyzRecord(ms uint32, n int) []byte {
	return append([]byte{byte(ms), byte(ms >> 8), byte(ms >> 16), byte(ms >> 24)}, make([]byte, 12*n)...)
}

// lossLog is a log of MeasAcc at 13 Hz whose data logger lost 3
// notifications: records at 0 and 77 ms, a LostMeasAcc record from 77 to
// 385 ms, and records at 385 and 462 ms.
func lossLog(tb testing.TB) []byte {
	tb.Helper()
	w := sbem.NewWriter()
	acc := xyzLayout("MeasAcc", "ArrayAcc")
	lost := &sbem.Layout{Stream: logbook.LostPrefix + "MeasAcc", Fixed: []sbem.Field{
		{Name: "Timestamp", Format: sbem.Uint32}, {Name: "Until", Format: sbem.Uint32}, {Name: "Notifications", Format: sbem.Uint32}}}
	log := []byte(sbem.Header)
	var err error
	for _, r := range []struct {
		l    *sbem.Layout
		n    int
		data []byte
	}{
		{acc, 1, xyzRecord(0, 1)},
		{acc, 1, xyzRecord(77, 1)},
		{lost, 0, []byte{77, 0, 0, 0, 0x81, 1, 0, 0, 3, 0, 0, 0}},
		{acc, 1, xyzRecord(385, 1)},
		{acc, 1, xyzRecord(462, 1)},
	} {
		if log, err = w.AppendRecord(log, r.l, r.n, r.data); err != nil {
			tb.Fatal(err)
		}
	}
	return log
}

// The data logger's record of its losses is a record of its own in every
// export: its fields in CSV and JSON, an annotation in EDF+ where the gap
// starts, and no signal.
func TestLossRecordExported(t *testing.T) {
	log := lossLog(t)
	var c bytes.Buffer
	if err := logfile.WriteCSV(&c, log); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"3,LostMeasAcc,77,Until,0,385\n", "3,LostMeasAcc,77,Notifications,0,3\n"} {
		if !strings.Contains(c.String(), row) {
			t.Errorf("CSV has no row %q:\n%s", row, c.String())
		}
	}
	f, err := logfile.EDF(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range f.Signals {
		if strings.Contains(s.Label, "Lost") || strings.Contains(s.Transducer, "Lost") {
			t.Errorf("signal %q (%s) of the loss record", s.Label, s.Transducer)
		}
	}
	want := edf.Annotation{Onset: 77 * time.Millisecond, Text: "Acc: 3 notifications lost by the data logger in 0.308 s"}
	found := false
	for _, a := range f.Annotations {
		found = found || a == want
	}
	if !found {
		t.Errorf("annotations %+v, want %+v among them", f.Annotations, want)
	}
}

// A stream that starts long after the first cannot share its time line:
// the export says so instead of padding without end.
func TestEDFRefusesLateStream(t *testing.T) {
	w := sbem.NewWriter()
	acc, gyro := xyzLayout("MeasAcc", "ArrayAcc"), xyzLayout("MeasGyro", "ArrayGyro")
	log := []byte(sbem.Header)
	var err error
	for _, r := range []struct {
		l  *sbem.Layout
		ts uint32
	}{{acc, 1000}, {acc, 1077}, {gyro, 1000 + 20*60*1000}, {gyro, 1077 + 20*60*1000}} {
		if log, err = w.AppendRecord(log, r.l, 1, xyzRecord(r.ts, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := logfile.EDF(log); !errors.Is(err, edf.ErrInvalid) || !strings.Contains(err.Error(), "MeasGyro starts 20m0s after the first") {
		t.Errorf("EDF of a stream 20 minutes late: %v", err)
	}
}

// Samples a log lacks, where a stream's timestamps jump, keep the time
// line: the gap holds the last sample and an annotation says how many. A
// busy device loses notifications before its data logger takes them: a
// run of lost records does not slow the measured rate either (which would
// put the records after it before their time, overlapping those before,
// and refuse the export).
func TestEDFFillsGap(t *testing.T) {
	for _, tt := range []struct {
		name       string
		rate       float64
		lost, upto int // the records lost: from lost up to upto
	}{
		{"one record at 13 Hz", 13, 10, 11},
		{"four records at 52 Hz", 52, 5, 9},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := sbem.NewWriter()
			acc := xyzLayout("MeasAcc", "ArrayAcc")
			log := []byte(sbem.Header)
			var err error
			for k := range 30 { // 4 samples a record
				if k >= tt.lost && k < tt.upto {
					continue
				}
				if log, err = w.AppendRecord(log, acc, 4, xyzRecord(uint32(math.Round(float64(k)*4000/tt.rate)), 4)); err != nil {
					t.Fatal(err)
				}
			}
			f, err := logfile.EDF(log)
			if err != nil {
				t.Fatal(err)
			}
			if s := f.Signals[0]; s.Rate != tt.rate || len(s.Samples) != 120 {
				t.Errorf("%s: %d samples at %g Hz, want 120 at %g Hz", s.Label, len(s.Samples), s.Rate, tt.rate)
			}
			text, onset := fmt.Sprintf("Acc: %d samples lost", 4*(tt.upto-tt.lost)), time.Duration(float64(4*tt.lost)*float64(time.Second)/tt.rate)
			if len(f.Annotations) != 1 || f.Annotations[0].Text != text || f.Annotations[0].Onset != onset {
				t.Errorf("annotations %v, want %q at %v", f.Annotations, text, onset)
			}
		})
	}
}

// A log names no sample rate: a stream's rate is measured from the time
// between its records, and a stream whose records give none is refused,
// named, instead of being given a rate guessed.
func TestEDFRefusesUnmeasurableRate(t *testing.T) {
	acc, gyro := xyzLayout("MeasAcc", "ArrayAcc"), xyzLayout("MeasGyro", "ArrayGyro")
	for _, tt := range []struct {
		name string
		gyro []uint32 // device times of the gyro stream's records
		want string   // in the error; "" for none
	}{
		{"two records", []uint32{1000, 1154}, ""},
		{"one record", []uint32{1000}, "stream MeasGyro: 1 record(s), none later than the first"},
		{"one time", []uint32{1000, 1000}, "stream MeasGyro: 2 record(s), none later than the first"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := sbem.NewWriter()
			log := []byte(sbem.Header)
			var err error
			for _, ts := range []uint32{1000, 1077, 1154} {
				if log, err = w.AppendRecord(log, acc, 4, xyzRecord(ts, 4)); err != nil {
					t.Fatal(err)
				}
			}
			for _, ts := range tt.gyro {
				if log, err = w.AppendRecord(log, gyro, 4, xyzRecord(ts, 4)); err != nil {
					t.Fatal(err)
				}
			}
			f, err := logfile.EDF(log)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if s := f.Signals[len(f.Signals)-1]; s.Rate != 26 {
					t.Errorf("%s at %g Hz, want 26", s.Label, s.Rate)
				}
				return
			}
			if !errors.Is(err, edf.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v; want ErrInvalid with %q", err, tt.want)
			}
		})
	}
}
