// Package record owns recordings: notifications of any set of streams
// written to files while they play, as CSV (one file per stream, a header
// with the stream, its sample rate and units, one row per sample) or JSON
// Lines (the notifications as they arrived). Both read back with the
// replay package, so a recording can be played through a device again.
package record

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"senseboard/resource"
	"senseboard/sensor"
)

// Format is a recording's file format.
type Format uint8

// The formats.
const (
	CSV Format = iota + 1
	JSONL
)

// ParseFormat reads csv or jsonl.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "csv":
		return CSV, nil
	case "jsonl", "json", "ndjson":
		return JSONL, nil
	}
	return 0, fmt.Errorf("recording format %q: csv or jsonl", s)
}

// FormatOf picks the format by a file name's extension (.csv or .jsonl).
func FormatOf(name string) (Format, error) {
	return ParseFormat(strings.TrimPrefix(filepath.Ext(name), "."))
}

func (f Format) String() string {
	if f == CSV {
		return "csv"
	}
	return "jsonl"
}

// Recorder writes notifications to files. It is safe for concurrent use.
type Recorder struct {
	base   string // JSON Lines: the file; CSV: the prefix of the per-stream files
	format Format
	start  time.Time

	mu      sync.Mutex
	jsonl   *bufio.Writer
	file    *os.File
	streams map[string]*csvStream
	files   []string
	closed  bool
}

type csvStream struct {
	start time.Time // of the recording
	f     *os.File
	w     *bufio.Writer
	kind  kind
	rate  float64
}

// New starts a recording. For JSON Lines path is the file; for CSV each
// stream goes to path with the stream's name before the extension, for
// example rec.csv holds rec-Meas_Acc_104.csv.
func New(path string, format Format) (*Recorder, error) {
	r := &Recorder{base: path, format: format, start: time.Now(), streams: map[string]*csvStream{}}
	if format == JSONL {
		f, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("recording: %w", err)
		}
		r.file, r.jsonl = f, bufio.NewWriter(f)
		r.files = append(r.files, path)
	}
	return r, nil
}

// Files lists the files written so far.
func (r *Recorder) Files() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.files...)
}

// Write records one notification of the stream with canonical URI uri
// (/net/<serial>/Meas/Acc/104) and JSON content.
func (r *Recorder) Write(uri string, content []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("recording %s is closed", r.base)
	}
	if r.format == JSONL {
		b := []byte(`{"t":`)
		b = strconv.AppendInt(b, time.Since(r.start).Milliseconds(), 10)
		b = append(b, `,"uri":`...)
		b = resource.AppendString(b, uri)
		b = append(b, `,"content":`...)
		b = append(b, content...)
		b = append(b, '}', '\n')
		_, err := r.jsonl.Write(b)
		return err
	}
	s, err := r.stream(uri)
	if err != nil {
		return err
	}
	return s.write(content)
}

// streamName turns /net/000123/Meas/Acc/104 into Meas_Acc_104.
func streamName(uri string) string {
	p := strings.TrimPrefix(uri, "/")
	if strings.HasPrefix(p, "net/") {
		if i := strings.IndexByte(p[4:], '/'); i >= 0 {
			p = p[4+i+1:]
		}
	}
	return strings.NewReplacer("/", "_", " ", "_").Replace(p)
}

// File returns the file that notifications of the stream with canonical
// URI uri go to: for CSV the name given to New with the stream's name
// before the extension (ecg.csv: ecg-Meas_ECG_250.csv), for JSON Lines the
// name given to New.
func (r *Recorder) File(uri string) string {
	if r.format == JSONL {
		return r.base
	}
	ext := filepath.Ext(r.base)
	return strings.TrimSuffix(r.base, ext) + "-" + streamName(uri) + ext
}

func (r *Recorder) stream(uri string) (*csvStream, error) {
	if s, ok := r.streams[uri]; ok {
		return s, nil
	}
	name := r.File(uri)
	f, err := os.Create(name)
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	s := &csvStream{start: r.start, f: f, w: bufio.NewWriter(f), kind: kindOf(uri), rate: rateOf(uri)}
	fmt.Fprintf(s.w, "# senseboard recording\n# stream: %s\n", uri)
	if s.rate > 0 {
		fmt.Fprintf(s.w, "# rate: %s\n", strconv.FormatFloat(s.rate, 'g', -1, 64))
	}
	fmt.Fprintf(s.w, "# units: %s\n%s\n", s.kind.units, strings.Join(s.kind.columns, ","))
	r.streams[uri] = s
	r.files = append(r.files, name)
	return s, nil
}

// kind is the CSV layout of a kind of stream.
type kind struct {
	columns []string
	units   string
}

var (
	kindAcc   = kind{[]string{"Timestamp", "x", "y", "z"}, "Timestamp=ms, x=m/s^2, y=m/s^2, z=m/s^2"}
	kindGyro  = kind{[]string{"Timestamp", "x", "y", "z"}, "Timestamp=ms, x=deg/s, y=deg/s, z=deg/s"}
	kindMagn  = kind{[]string{"Timestamp", "x", "y", "z"}, "Timestamp=ms, x=uT, y=uT, z=uT"}
	kindIMU6  = kind{[]string{"Timestamp", "acc_x", "acc_y", "acc_z", "gyro_x", "gyro_y", "gyro_z"}, "Timestamp=ms, acc=m/s^2, gyro=deg/s"}
	kindIMU6m = kind{[]string{"Timestamp", "acc_x", "acc_y", "acc_z", "magn_x", "magn_y", "magn_z"}, "Timestamp=ms, acc=m/s^2, magn=uT"}
	kindIMU9  = kind{[]string{"Timestamp", "acc_x", "acc_y", "acc_z", "gyro_x", "gyro_y", "gyro_z", "magn_x", "magn_y", "magn_z"}, "Timestamp=ms, acc=m/s^2, gyro=deg/s, magn=uT"}
	kindECG   = kind{[]string{"Timestamp", "sample"}, "Timestamp=ms, sample=0.38147 uV"}
	kindECGmV = kind{[]string{"Timestamp", "mV"}, "Timestamp=ms, mV=millivolt"}
	kindHR    = kind{[]string{"Received", "average", "rr"}, "Received=ms since the recording started, average=bpm, rr=ms"}
	kindTemp  = kind{[]string{"Timestamp", "measurement"}, "Timestamp=ms, measurement=K"}
	kindOther = kind{[]string{"Received", "json"}, "Received=ms since the recording started"}
)

func kindOf(uri string) kind {
	u := strings.ToLower(uri)
	switch {
	case strings.Contains(u, "/meas/acc/"):
		return kindAcc
	case strings.Contains(u, "/meas/gyro/"):
		return kindGyro
	case strings.Contains(u, "/meas/magn/"):
		return kindMagn
	case strings.Contains(u, "/meas/imu6m/"):
		return kindIMU6m
	case strings.Contains(u, "/meas/imu6/"):
		return kindIMU6
	case strings.Contains(u, "/meas/imu9/"):
		return kindIMU9
	case strings.Contains(u, "/meas/ecg/") && strings.HasSuffix(u, "/mv"):
		return kindECGmV
	case strings.Contains(u, "/meas/ecg/"):
		return kindECG
	case strings.HasSuffix(u, "/meas/hr"):
		return kindHR
	case strings.HasSuffix(u, "/meas/temp"):
		return kindTemp
	}
	return kindOther
}

// rateOf finds the sample rate in a measurement URI, 0 when it has none.
func rateOf(uri string) float64 {
	parts := strings.Split(uri, "/")
	for i := len(parts) - 1; i >= 3; i-- {
		if v, err := strconv.ParseFloat(parts[i], 64); err == nil && v > 0 {
			return v
		}
	}
	return 0
}

// notification is any measurement notification.
type notification struct {
	Timestamp   *float64
	ArrayAcc    []sensor.XYZ
	ArrayGyro   []sensor.XYZ
	ArrayMagn   []sensor.XYZ
	Samples     []json.Number
	Measurement *json.Number
	Average     *json.Number  `json:"average"`
	RRData      []json.Number `json:"rrData"`
}

func f32(v float32) string { return string(resource.AppendFloat32(nil, v)) }

func (s *csvStream) write(content []byte) error {
	if s.kind.columns[0] != "Timestamp" { // rows by arrival: heart rate and other resources
		return s.writeOther(content)
	}
	var n notification
	if err := json.Unmarshal(content, &n); err != nil || n.Timestamp == nil {
		return fmt.Errorf("recording: not a measurement notification: %s", clip(content))
	}
	step := 0.0
	if s.rate > 0 {
		step = 1000 / s.rate
	}
	ts := func(i int) string { return strconv.FormatFloat(*n.Timestamp+float64(i)*step, 'f', 3, 64) }
	switch {
	case n.Measurement != nil:
		fmt.Fprintf(s.w, "%s,%s\n", ts(0), *n.Measurement)
	case n.Samples != nil:
		for i, v := range n.Samples {
			fmt.Fprintf(s.w, "%s,%s\n", ts(i), v)
		}
	case s.kind.columns[1] == "acc_x":
		for i := range n.ArrayAcc {
			row := []string{ts(i)}
			for _, arr := range [][]sensor.XYZ{n.ArrayAcc, n.ArrayGyro, n.ArrayMagn} {
				if arr != nil && i < len(arr) {
					row = append(row, f32(arr[i].X), f32(arr[i].Y), f32(arr[i].Z))
				}
			}
			s.w.WriteString(strings.Join(row, ",") + "\n")
		}
	default:
		arr := n.ArrayAcc
		if arr == nil {
			arr = n.ArrayGyro
		}
		if arr == nil {
			arr = n.ArrayMagn
		}
		for i, v := range arr {
			fmt.Fprintf(s.w, "%s,%s,%s,%s\n", ts(i), f32(v.X), f32(v.Y), f32(v.Z))
		}
	}
	return nil
}

func (s *csvStream) writeOther(content []byte) error {
	at := time.Since(s.start).Milliseconds()
	if s.kind.columns[1] == "average" {
		var n notification
		if err := json.Unmarshal(content, &n); err != nil || n.Average == nil {
			return fmt.Errorf("recording: not a heart-rate notification: %s", clip(content))
		}
		if len(n.RRData) == 0 { // an average without a new beat
			fmt.Fprintf(s.w, "%d,%s,\n", at, *n.Average)
		}
		for _, rr := range n.RRData {
			fmt.Fprintf(s.w, "%d,%s,%s\n", at, *n.Average, rr)
		}
		return nil
	}
	b, _ := json.Marshal(string(content))
	fmt.Fprintf(s.w, "%d,%s\n", at, b)
	return nil
}

func clip(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "..."
	}
	return string(b)
}

// Flush writes what is buffered to the files, so that they can be read
// while the recording goes on.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	var first error
	if r.jsonl != nil {
		first = r.jsonl.Flush()
	}
	for _, s := range r.streams {
		if err := s.w.Flush(); first == nil {
			first = err
		}
	}
	return first
}

// Close flushes and closes every file.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	if r.jsonl != nil {
		keep(r.jsonl.Flush())
		keep(r.file.Close())
	}
	for _, s := range r.streams {
		keep(s.w.Flush())
		keep(s.f.Close())
	}
	return first
}
