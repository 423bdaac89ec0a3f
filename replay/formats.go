package replay

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"senseboard/sensor"
)

// MaxSamples bounds the samples of one series read from a file.
const MaxSamples = 50_000_000

// ms converts milliseconds to a duration.
func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func newSeries(c Channel) *Series {
	n := 3
	if c == ECG || c == Temp {
		n = 1
	}
	return &Series{Channel: c, Axes: make([][]float64, n)}
}

func (s *Series) add(t time.Duration, v ...float64) error {
	if len(s.T) >= MaxSamples {
		return fmt.Errorf("%s: more than %d samples", s.Channel, MaxSamples)
	}
	s.T = append(s.T, t)
	for k := range s.Axes {
		s.Axes[k] = append(s.Axes[k], v[k])
	}
	return nil
}

// IMU9Logbook reads a logbook export of /Meas/IMU9 (or of /Meas/Acc,
// /Meas/Gyro, /Meas/Magn, /Meas/IMU6): {"Meas":{"IMU9":[{"Timestamp":ms,
// "ArrayAcc":[...],...}, ...]}}. The samples of a packet are spread at the
// rate the packets' timestamps imply.
func IMU9Logbook(name string, data []byte) (*Recording, error) {
	var doc struct {
		Meas map[string][]struct {
			Timestamp float64
			ArrayAcc  []sensor.XYZ
			ArrayGyro []sensor.XYZ
			ArrayMagn []sensor.XYZ
		}
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: not a logbook export: %w", name, err)
	}
	r := &Recording{Name: name}
	for stream, packets := range doc.Meas {
		if len(packets) < 2 {
			continue
		}
		per := max(len(packets[0].ArrayAcc), len(packets[0].ArrayGyro), len(packets[0].ArrayMagn))
		if per == 0 {
			return nil, fmt.Errorf("%s: %s packets hold no samples", name, stream)
		}
		// rate from the first and last packets
		span := packets[len(packets)-1].Timestamp - packets[0].Timestamp
		if span <= 0 {
			return nil, fmt.Errorf("%s: %s timestamps do not increase", name, stream)
		}
		rate := float64(per*(len(packets)-1)) / (span / 1000)
		step := 1000 / rate
		for _, set := range []struct {
			c   Channel
			get func(i int) []sensor.XYZ
		}{
			{Acc, func(i int) []sensor.XYZ { return packets[i].ArrayAcc }},
			{Gyro, func(i int) []sensor.XYZ { return packets[i].ArrayGyro }},
			{Magn, func(i int) []sensor.XYZ { return packets[i].ArrayMagn }},
		} {
			if len(set.get(0)) == 0 || r.Series[set.c] != nil {
				continue
			}
			s := newSeries(set.c)
			s.Rate = math.Round(rate*100) / 100
			for i, p := range packets {
				for k, v := range set.get(i) {
					if err := s.add(ms(p.Timestamp+float64(k)*step), float64(v.X), float64(v.Y), float64(v.Z)); err != nil {
						return nil, fmt.Errorf("%s: %w", name, err)
					}
				}
			}
			r.Series[set.c] = s
		}
	}
	if err := r.finish(); err != nil {
		return nil, err
	}
	return r, nil
}

// Missing is the sample value some ECG exports use for a lost sample.
const Missing = -131072

// readCSV reads CSV records, skipping lines before the header row, which
// is the first row whose first field is one of headers.
func readCSV(data []byte, headers ...string) ([]string, [][]string, error) {
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.Comment = '#'
	cr.ReuseRecord = false
	var header []string
	var rows [][]string
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		if header == nil {
			for _, h := range headers {
				if len(rec) > 0 && strings.EqualFold(strings.TrimSpace(rec[0]), h) {
					header = rec
				}
			}
			continue
		}
		if len(rec) == 1 && rec[0] == "" {
			continue
		}
		rows = append(rows, rec)
	}
	if header == nil {
		return nil, nil, fmt.Errorf("no header row starting with %s", strings.Join(headers, " or "))
	}
	return header, rows, nil
}

func parseFloat(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return v, nil
}

// ECGCSV reads the ECG exports: "Timestamp_ms,Value" in mV, or
// "Timestamp,Sample" with Unix seconds and integer units, where -131072
// marks a lost sample.
func ECGCSV(name string, data []byte) (*Recording, error) {
	header, rows, err := readCSV(data, "Timestamp_ms", "Timestamp")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(header) < 2 {
		return nil, fmt.Errorf("%s: header %v: want a timestamp and a value column", name, header)
	}
	seconds := strings.EqualFold(header[0], "Timestamp")
	units := strings.EqualFold(strings.TrimSpace(header[1]), "Sample")
	s := newSeries(ECG)
	for i, row := range rows {
		if len(row) < 2 {
			return nil, fmt.Errorf("%s: row %d: %d fields", name, i+1, len(row))
		}
		t, err := parseFloat(row[0])
		if err != nil {
			return nil, fmt.Errorf("%s: row %d: timestamp %v", name, i+1, err)
		}
		v, err := parseFloat(row[1])
		if err != nil {
			return nil, fmt.Errorf("%s: row %d: value %v", name, i+1, err)
		}
		switch {
		case units && v == Missing:
			v = math.NaN()
		case units:
			v *= sensor.ECGUnit
		}
		if seconds {
			t *= 1000
		}
		if err := s.add(ms(t), v); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	r := &Recording{Name: name}
	r.Series[ECG] = s
	if err := r.finish(); err != nil {
		return nil, err
	}
	return r, nil
}

// columns maps the value columns of a CSV header to channels and axes.
type column struct {
	c    Channel
	axis int
	unit float64 // multiply the value by this
}

func columnOf(name, stream string) (column, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	axis := map[string]int{"x": 0, "y": 1, "z": 2}
	// PC-simulator form: /Meas/Acc/x
	if strings.HasPrefix(n, "/meas/") {
		parts := strings.Split(strings.TrimPrefix(n, "/meas/"), "/")
		if len(parts) >= 1 {
			c := map[string]Channel{"acc": Acc, "gyro": Gyro, "magn": Magn, "ecg": ECG, "temp": Temp}
			ch, ok := c[parts[0]]
			if !ok {
				return column{}, false
			}
			if ch == ECG || ch == Temp {
				return column{ch, 0, 1}, true
			}
			if len(parts) == 2 {
				if a, ok := axis[parts[1]]; ok {
					return column{ch, a, 1}, true
				}
			}
		}
		return column{}, false
	}
	// senseboard form: x,y,z with the stream in the header, or acc_x
	if a, ok := axis[n]; ok {
		s := strings.ToLower(stream)
		switch {
		case strings.Contains(s, "/acc"):
			return column{Acc, a, 1}, true
		case strings.Contains(s, "/gyro"):
			return column{Gyro, a, 1}, true
		case strings.Contains(s, "/magn"):
			return column{Magn, a, 1}, true
		}
		return column{}, false
	}
	if ch, ax, ok := strings.Cut(n, "_"); ok {
		c := map[string]Channel{"acc": Acc, "gyro": Gyro, "magn": Magn}
		if cc, ok1 := c[ch]; ok1 {
			if a, ok2 := axis[ax]; ok2 {
				return column{cc, a, 1}, true
			}
		}
	}
	switch n {
	case "mv":
		return column{ECG, 0, 1}, true
	case "sample", "samples":
		return column{ECG, 0, sensor.ECGUnit}, true
	case "measurement", "temperature", "kelvin":
		return column{Temp, 0, 1}, true
	}
	return column{}, false
}

// TableCSV reads senseboard's own CSV (with "# stream:" and "# rate:" header
// lines) and the PC-simulator CSV (with a "LoopingTimeStamp:<ms>" line).
func TableCSV(name string, data []byte) (*Recording, error) {
	meta := map[string]string{}
	loop := 0.0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			if k, v, ok := strings.Cut(strings.TrimPrefix(line, "#"), ":"); ok {
				meta[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
			}
			continue
		}
		if v, ok := strings.CutPrefix(line, "LoopingTimeStamp:"); ok {
			var err error
			if loop, err = parseFloat(v); err != nil || loop <= 0 {
				return nil, fmt.Errorf("%s: LoopingTimeStamp %q", name, v)
			}
			continue
		}
		if line != "" {
			break
		}
	}
	body := data
	if i := bytes.Index(data, []byte("LoopingTimeStamp:")); i >= 0 {
		if nl := bytes.IndexByte(data[i:], '\n'); nl >= 0 {
			body = data[i+nl+1:]
		}
	}
	header, rows, err := readCSV(body, "Timestamp")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cols := make([]column, len(header))
	used := map[Channel]bool{}
	for i, h := range header[1:] {
		c, ok := columnOf(h, meta["stream"])
		if !ok {
			cols[i+1] = column{c: numChannels}
			continue
		}
		cols[i+1] = c
		used[c.c] = true
	}
	if len(used) == 0 {
		return nil, fmt.Errorf("%s: no column of a known signal in %v", name, header)
	}
	r := &Recording{Name: name}
	for c := range used {
		r.Series[c] = newSeries(c)
		if rate, err := parseFloat(meta["rate"]); err == nil && rate > 0 {
			r.Series[c].Rate = rate
		}
	}
	vals := make([][3]float64, numChannels)
	for i, row := range rows {
		if len(row) != len(header) {
			return nil, fmt.Errorf("%s: row %d has %d fields, the header %d", name, i+1, len(row), len(header))
		}
		t, err := parseFloat(row[0])
		if err != nil {
			return nil, fmt.Errorf("%s: row %d: timestamp %v", name, i+1, err)
		}
		for k := 1; k < len(row); k++ {
			c := cols[k]
			if c.c == numChannels {
				continue
			}
			v, err := parseFloat(row[k])
			if err != nil {
				return nil, fmt.Errorf("%s: row %d, column %s: %v", name, i+1, header[k], err)
			}
			vals[c.c][c.axis] = v * c.unit
		}
		for c := range used {
			if err := r.Series[c].add(ms(t), vals[c][:]...); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	if err := r.finish(); err != nil {
		return nil, err
	}
	if loop > 0 {
		r.Length = ms(loop)
	}
	return r, nil
}

// JSONLines reads notifications as senseboard records them:
// {"t": ms, "uri": "/net/<serial>/Meas/Acc/104", "content": {...}} per line.
// Acceleration, gyroscope, magnetometer and IMU notifications, ECG
// notifications (integer and mV) and temperature are read; others are
// skipped.
func JSONLines(name string, data []byte) (*Recording, error) {
	r := &Recording{Name: name}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var rec struct {
			URI     string
			Content struct {
				Timestamp   *float64
				ArrayAcc    []sensor.XYZ
				ArrayGyro   []sensor.XYZ
				ArrayMagn   []sensor.XYZ
				Samples     []float64
				Measurement *float64
			}
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", name, n, err)
		}
		c := rec.Content
		if c.Timestamp == nil {
			continue
		}
		rate := rateOf(rec.URI)
		step := 0.0
		if rate > 0 {
			step = 1000 / rate
		}
		for _, set := range []struct {
			ch Channel
			v  []sensor.XYZ
		}{{Acc, c.ArrayAcc}, {Gyro, c.ArrayGyro}, {Magn, c.ArrayMagn}} {
			if len(set.v) == 0 {
				continue
			}
			if rate <= 0 {
				return nil, fmt.Errorf("%s: line %d: no sample rate in uri %q", name, n, rec.URI)
			}
			s := r.series(set.ch, rate)
			for k, v := range set.v {
				if err := s.add(ms(*c.Timestamp+float64(k)*step), float64(v.X), float64(v.Y), float64(v.Z)); err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
			}
		}
		if len(c.Samples) > 0 {
			if rate <= 0 {
				return nil, fmt.Errorf("%s: line %d: no sample rate in uri %q", name, n, rec.URI)
			}
			unit := sensor.ECGUnit
			if strings.HasSuffix(strings.ToLower(rec.URI), "/mv") {
				unit = 1
			}
			s := r.series(ECG, rate)
			for k, v := range c.Samples {
				if err := s.add(ms(*c.Timestamp+float64(k)*step), v*unit); err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
			}
		}
		if c.Measurement != nil {
			if err := r.series(Temp, 0).add(ms(*c.Timestamp), *c.Measurement); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := r.finish(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Recording) series(c Channel, rate float64) *Series {
	if r.Series[c] == nil {
		r.Series[c] = newSeries(c)
		r.Series[c].Rate = rate
	}
	return r.Series[c]
}

// rateOf finds the sample rate in a measurement URI such as
// /net/000123/Meas/IMU9/104 or /Meas/ECG/256/mV.
func rateOf(uri string) float64 {
	parts := strings.Split(uri, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if v, err := strconv.ParseFloat(parts[i], 64); err == nil && v > 0 {
			return v
		}
	}
	return 0
}
