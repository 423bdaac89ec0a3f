package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"senseboard/edf"
	"senseboard/fault"
	"senseboard/sensor"
)

// EDF reads a recording's files back (the CSV files of its streams, or its
// JSON Lines file) and makes one EDF+ recording of them with edf.Builder:
//
//   - a signal per sampled quantity, labelled and in the units
//     edf.SensorChannel gives ("ECG" in mV; "Acc x", "IMU9 Gyro z" in m/s²,
//     deg/s and µT), at the rate its path names, placed by the samples'
//     device timestamps: the first sample of the recording is at 0 and
//     later streams are padded at their start with their first sample;
//   - annotations for the events: heart rate with its RR intervals
//     ("HR 72 bpm RR 830 ms") and other notifications ("/System/States/0:
//     {...}") when they arrived, temperatures ("Temp 306.90 K") at their
//     device time, and samples that never came ("Acc: 12 samples lost",
//     where a stream's timestamps jump; the gap holds the last sample);
//   - the field faults of its time (its FaultsExt file) at their start
//     and end in device time ("fault 2 stall start {...}", "fault 2 stall
//     end (resubscribed)").
//
// Arrival times count from the recording's start and device times from
// its first sample; the two agree within the notifications' latency. The
// caller sets Start (the recording's start), Patient and Recording.
func EDF(files []string) (*edf.File, error) {
	var b edf.Builder
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("recording: %w", err)
		}
		switch {
		case strings.HasSuffix(name, FaultsExt):
			err = readFaults(&b, data)
		case strings.HasSuffix(name, ".jsonl"):
			err = readJSONL(&b, data)
		default:
			err = readCSV(&b, data)
		}
		if err != nil {
			return nil, fmt.Errorf("recording %s: %w", name, err)
		}
	}
	f, err := b.File()
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	return f, nil
}

// stream returns the Builder's stream of uri, of kind k, and the factor
// from its recorded values to its signals' units.
func stream(b *edf.Builder, uri string, k kind) (s *edf.Stream, scale float64) {
	scale = 1
	if k.columns[1] == "sample" { // raw ECG counts
		scale = sensor.ECGUnit
	}
	s, isNew := b.Stream(uri)
	if !isNew {
		return s, scale
	}
	name := shortName(uri)
	s.Name, s.Transducer, s.Rate = name, trimPath(uri), rateOf(uri)
	for _, c := range k.columns[1:] {
		switch {
		case k.columns[1] == "sample" || k.columns[1] == "mV":
			s.Channels = append(s.Channels, edf.SensorChannel(name, "ECG", ""))
		case k.columns[1] == "x": // Acc, Gyro or Magn alone
			s.Channels = append(s.Channels, edf.SensorChannel(name, name, c))
		default: // acc_x, gyro_y, magn_z of the IMU streams
			q, axis, _ := strings.Cut(c, "_")
			s.Channels = append(s.Channels, edf.SensorChannel(name, q, axis))
		}
	}
	return s, scale
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

func readCSV(b *edf.Builder, data []byte) error {
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
				if len(fields) < 2 {
					return fmt.Errorf("line %d: %d column, want %d (%s)", line, len(fields), len(k.columns), strings.Join(k.columns, ","))
				}
				text := "HR " + fields[1] + " bpm"
				if len(fields) > 2 && fields[2] != "" {
					text += " RR " + fields[2] + " ms"
				}
				b.Annotate(arrival(at), text)
				continue
			}
			var s string
			if json.Unmarshal([]byte(rest), &s) == nil {
				rest = s
			}
			b.Annotate(arrival(at), trimPath(uri)+": "+rest)
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
			b.AnnotateAt(vals[0], fmt.Sprintf("Temp %.2f K", vals[1]))
			continue
		}
		s, scale := stream(b, uri, k)
		for i := range vals[1:] {
			vals[1+i] *= scale
		}
		if err := s.Add(vals[0], vals[1:]); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
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

func readJSONL(b *edf.Builder, data []byte) error {
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
			b.Annotate(arrival(m.T), text)
		case other:
			b.Annotate(arrival(m.T), trimPath(m.URI)+": "+string(m.Content))
		case n.Timestamp == nil:
			return fmt.Errorf("line %d: %s: a measurement without its Timestamp", line+1, m.URI)
		case k.columns[1] == "measurement":
			v, _ := strconv.ParseFloat(numberText(n.Measurement), 64)
			b.AnnotateAt(*n.Timestamp, fmt.Sprintf("Temp %.2f K", v))
		default:
			s, scale := stream(b, m.URI, k)
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
			var values []float64
			for _, row := range rows {
				if len(row) != len(s.Channels) {
					return fmt.Errorf("line %d: %s: %d values a sample, want %d", line+1, m.URI, len(row), len(s.Channels))
				}
				for _, v := range row {
					values = append(values, v*scale)
				}
			}
			if err := s.Add(*n.Timestamp, values); err != nil {
				return fmt.Errorf("line %d: %w", line+1, err)
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

// arrival returns the onset of an event that arrived ms after the
// recording started.
func arrival(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// readFaults annotates the field faults of a recording's time.
func readFaults(b *edf.Builder, data []byte) error {
	recs, err := fault.ReadJSONL(bytes.NewReader(data))
	if err != nil {
		return err
	}
	for _, r := range recs {
		name := fmt.Sprintf("fault %d %s", r.ID, r.Fault.Kind)
		b.AnnotateAt(float64(r.Start.MS), name+" start "+r.Fault.String())
		if r.End != nil {
			b.AnnotateAt(float64(r.End.MS), name+" end ("+r.EndedBy+")")
		}
	}
	return nil
}
