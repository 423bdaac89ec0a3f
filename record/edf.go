package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"senseboard/edf"
	"senseboard/sensor"
)

// EDF reads a recording's files back (the CSV files of its streams, or its
// JSON Lines file) and makes one EDF+ recording of them:
//
//   - a signal per sampled quantity (ECG in mV, the Acc, Gyro and Magn axes
//     in m/s², deg/s and µT, labelled "ECG", "Acc x", "IMU9 gyro_z"), at the
//     rate its path names, placed by the samples' device timestamps: the
//     first sample of the recording is at 0 and later streams are padded
//     at their start with their first sample;
//   - annotations for the events: heart rate with its RR intervals
//     ("HR 72 bpm RR 830 ms") and other notifications ("/System/States/0:
//     {...}") when they arrived, temperatures ("Temp 306.90 K") at their
//     device time, and samples that never came ("Acc: 12 samples lost",
//     where a stream's timestamps jump; the gap holds the last sample).
//
// Arrival times count from the recording's start and device times from
// its first sample; the two agree within the notifications' latency. The
// caller sets Start (the recording's start), Patient and Recording.
func EDF(files []string) (*edf.File, error) {
	b := &edfBuilder{streams: map[string]*edfStream{}}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("recording: %w", err)
		}
		if strings.HasSuffix(name, ".jsonl") {
			err = b.readJSONL(data)
		} else {
			err = b.readCSV(data)
		}
		if err != nil {
			return nil, fmt.Errorf("recording %s: %w", name, err)
		}
	}
	return b.file()
}

type edfBuilder struct {
	streams map[string]*edfStream
	order   []*edfStream
	notes   []edfNote
}

// edfNote is an event: at ms since the recording's start (arrival), or at
// a device time in ms (device).
type edfNote struct {
	at     float64
	device bool
	text   string
}

// edfStream is one sampled stream: a row of values per sample.
type edfStream struct {
	uri    string
	rate   float64
	labels []string
	units  []string
	scale  float64
	ts     []float64 // device ms of each row
	rows   [][]float64
}

func (b *edfBuilder) stream(uri string, k kind) *edfStream {
	if s := b.streams[uri]; s != nil {
		return s
	}
	s := &edfStream{uri: uri, rate: rateOf(uri), scale: 1}
	name := shortName(uri)
	unit := map[string]string{"acc": "m/s2", "gyro": "deg/s", "magn": "uT"}
	for _, c := range k.columns[1:] {
		switch {
		case k.columns[1] == "sample" || k.columns[1] == "mV":
			s.labels, s.units = append(s.labels, "ECG"), append(s.units, "mV")
			if c == "sample" {
				s.scale = sensor.ECGUnit
			}
		case k.columns[1] == "x": // Acc, Gyro or Magn alone
			s.labels = append(s.labels, name+" "+c)
			s.units = append(s.units, unit[strings.ToLower(name)])
		default: // acc_x, gyro_y, magn_z of the IMU streams
			q, _, _ := strings.Cut(c, "_")
			s.labels = append(s.labels, name+" "+c)
			s.units = append(s.units, unit[q])
		}
	}
	b.streams[uri] = s
	b.order = append(b.order, s)
	return s
}

// shortName names a stream in labels: Acc, IMU9, ECG.
func shortName(uri string) string {
	parts := strings.Split(strings.Trim(uri, "/"), "/")
	for i, p := range parts {
		if strings.EqualFold(p, "Meas") && i+1 < len(parts) {
			return parts[i+1]
		}
	}
	return parts[len(parts)-1]
}

func (b *edfBuilder) readCSV(data []byte) error {
	var uri string
	var k kind
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	header := true
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if v, ok := strings.CutPrefix(text, "# stream: "); ok {
			uri, k = v, kindOf(v)
			continue
		}
		if strings.HasPrefix(text, "#") || text == "" {
			continue
		}
		if header { // the column names
			header = false
			if uri == "" {
				return fmt.Errorf("line %d: a CSV recording without its \"# stream:\" line", line)
			}
			continue
		}
		fields := strings.Split(text, ",")
		if k.columns[0] != "Timestamp" { // by arrival: heart rate and others
			at, err := strconv.ParseFloat(fields[0], 64)
			if err != nil {
				return fmt.Errorf("line %d: time %q: %v", line, fields[0], err)
			}
			rest := strings.Join(fields[1:], ",")
			if k.columns[1] == "average" {
				text := "HR " + fields[1] + " bpm"
				if len(fields) > 2 && fields[2] != "" {
					text += " RR " + fields[2] + " ms"
				}
				b.notes = append(b.notes, edfNote{at: at, text: text})
				continue
			}
			var s string
			if json.Unmarshal([]byte(rest), &s) == nil {
				rest = s
			}
			b.notes = append(b.notes, edfNote{at: at, text: trimPath(uri) + ": " + rest})
			continue
		}
		vals := make([]float64, len(fields))
		for i, f := range fields {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return fmt.Errorf("line %d: column %d: %q is not a number", line, i+1, f)
			}
			vals[i] = v
		}
		if len(vals) != len(k.columns) {
			return fmt.Errorf("line %d: %d columns, want %d (%s)", line, len(vals), len(k.columns), strings.Join(k.columns, ","))
		}
		if k.columns[1] == "measurement" {
			b.notes = append(b.notes, edfNote{at: vals[0], device: true, text: fmt.Sprintf("Temp %.2f K", vals[1])})
			continue
		}
		s := b.stream(uri, k)
		s.ts = append(s.ts, vals[0])
		s.rows = append(s.rows, vals[1:])
	}
	return sc.Err()
}

// trimPath turns /net/000123/System/States/0 into /System/States/0.
func trimPath(uri string) string {
	if rest, ok := strings.CutPrefix(uri, "/net/"); ok {
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			return rest[i:]
		}
	}
	return uri
}

func (b *edfBuilder) readJSONL(data []byte) error {
	for line, text := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		var m struct {
			T       float64         `json:"t"`
			URI     string          `json:"uri"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(text, &m); err != nil {
			return fmt.Errorf("line %d: %v", line+1, err)
		}
		k := kindOf(m.URI)
		other := k.columns[1] == "json"
		var n notification
		if !other {
			if err := json.Unmarshal(m.Content, &n); err != nil {
				return fmt.Errorf("line %d: %s: %v", line+1, m.URI, err)
			}
		}
		switch {
		case k.columns[1] == "average":
			text := "HR " + numberText(n.Average) + " bpm"
			for _, rr := range n.RRData {
				text += " RR " + rr.String() + " ms"
			}
			b.notes = append(b.notes, edfNote{at: m.T, text: text})
		case other:
			b.notes = append(b.notes, edfNote{at: m.T, text: trimPath(m.URI) + ": " + string(m.Content)})
		case n.Timestamp == nil:
			return fmt.Errorf("line %d: %s: a measurement without its Timestamp", line+1, m.URI)
		case k.columns[1] == "measurement":
			v, _ := strconv.ParseFloat(numberText(n.Measurement), 64)
			b.notes = append(b.notes, edfNote{at: *n.Timestamp, device: true, text: fmt.Sprintf("Temp %.2f K", v)})
		default:
			s := b.stream(m.URI, k)
			step := 0.0
			if s.rate > 0 {
				step = 1000 / s.rate
			}
			var rows [][]float64
			switch {
			case n.Samples != nil:
				for _, v := range n.Samples {
					f, _ := v.Float64()
					rows = append(rows, []float64{f})
				}
			default:
				for i := range max(len(n.ArrayAcc), len(n.ArrayGyro), len(n.ArrayMagn)) {
					var row []float64
					for _, arr := range [][]xyz{xyzs(n.ArrayAcc), xyzs(n.ArrayGyro), xyzs(n.ArrayMagn)} {
						if i < len(arr) {
							row = append(row, arr[i][0], arr[i][1], arr[i][2])
						}
					}
					rows = append(rows, row)
				}
			}
			for i, row := range rows {
				if len(row) != len(s.labels) {
					return fmt.Errorf("line %d: %s: %d values a sample, want %d", line+1, m.URI, len(row), len(s.labels))
				}
				s.ts = append(s.ts, *n.Timestamp+float64(i)*step)
				s.rows = append(s.rows, row)
			}
		}
	}
	return nil
}

func numberText(n *json.Number) string {
	if n == nil {
		return "?"
	}
	return n.String()
}

type xyz [3]float64

func xyzs(a []sensor.XYZ) []xyz {
	out := make([]xyz, len(a))
	for i, v := range a {
		out[i] = xyz{float64(v.X), float64(v.Y), float64(v.Z)}
	}
	return out
}

// maxJump is the longest gap in a stream's device time that EDF filled:
// a longer one (a device reset, a clock set) is refused.
const maxJump = 10 * time.Minute

// lostAt is how many missing samples, at least, make a gap: two, or 2 ms
// of samples at high rates (timestamps are whole milliseconds).
func lostAt(rate float64) int { return max(2, int(math.Ceil(rate*0.002))) }

func (b *edfBuilder) file() (*edf.File, error) {
	var sampled []*edfStream
	t0 := math.Inf(1)
	for _, s := range b.order {
		if len(s.rows) == 0 {
			continue
		}
		if s.rate <= 0 {
			return nil, fmt.Errorf("%w: stream %s has no sample rate in its path", edf.ErrInvalid, s.uri)
		}
		sampled = append(sampled, s)
		t0 = min(t0, slices.Min(s.ts))
	}
	if len(sampled) == 0 {
		return nil, fmt.Errorf("%w: the recording has no sampled stream (ECG, Acc, Gyro, Magn, IMU) to export", edf.ErrInvalid)
	}
	f := &edf.File{Recording: "X X senseboard"}
	at := func(ms float64) time.Duration { return time.Duration(max(0, ms) * float64(time.Millisecond)) }
	for _, s := range sampled {
		cols := make([][]float64, len(s.labels))
		for r, row := range s.rows {
			idx := int(math.Round((s.ts[r] - t0) * s.rate / 1000))
			n := len(cols[0])
			if idx-n > int(maxJump.Seconds()*s.rate) {
				return nil, fmt.Errorf("%w: stream %s jumps %.0f s ahead at its sample %d (from %.0f ms to %.0f ms, device time); an EDF+ file has one time line, and gaps of at most %v are filled",
					edf.ErrInvalid, s.uri, float64(idx-n)/s.rate, r+1, t0+float64(n)*1000/s.rate, s.ts[r], maxJump)
			}
			if r == 0 { // pad the start with the first sample
				for c := range cols {
					for range idx {
						cols[c] = append(cols[c], row[c]*s.scale)
					}
				}
			} else if missing := idx - n; missing >= lostAt(s.rate) {
				f.Annotations = append(f.Annotations, edf.Annotation{Onset: at(float64(n) * 1000 / s.rate),
					Text: fmt.Sprintf("%s: %d samples lost", shortName(s.uri), missing)})
				for c := range cols {
					last := cols[c][n-1]
					for range missing {
						cols[c] = append(cols[c], last)
					}
				}
			}
			for c := range cols {
				cols[c] = append(cols[c], row[c]*s.scale)
			}
		}
		for c, samples := range cols {
			sig := edf.Signal{Label: s.labels[c], Unit: s.units[c], Transducer: trimPath(s.uri), Rate: s.rate, Samples: samples}
			sig.Fit()
			f.Signals = append(f.Signals, sig)
		}
	}
	for _, n := range b.notes {
		ms := n.at
		if n.device {
			ms -= t0
		}
		f.Annotations = append(f.Annotations, edf.Annotation{Onset: at(ms), Text: n.text})
	}
	return f, nil
}
