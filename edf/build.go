package edf

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Builder makes one File of streams sampled at fixed rates whose samples
// carry device timestamps (in ms), and of events. An EDF+ file has one
// time line: File puts the earliest sample of all streams at 0, pads each
// stream that starts later with its first sample, and fills the gaps of a
// stream (samples that never came, where its timestamps jump) with the
// last sample before them, annotating each gap ("IMU9: 12 samples lost").
// A stream whose timestamps go back (a device reset, a clock set, rows
// sent twice) is refused rather than shifted: its rows would otherwise sit
// later on the time line than their timestamps say. Timestamps are whole
// milliseconds, so a step back of less than a gap (one sample at most
// rates) is taken as their rounding and the rows are kept in order.
// Both exports of the product, of logs and of recordings, build their
// files with it.
type Builder struct {
	streams  []*Stream
	byKey    map[string]*Stream
	notes    []note
	anchored bool
	utc      time.Time
	deviceMs float64
}

// Stream is one sampled stream of a Builder: rows of samples, one value a
// channel.
type Stream struct {
	// Name names the stream in annotations: "IMU9" in "IMU9: 12 samples lost".
	Name string
	// Transducer is the signals' transducer field, and names the stream in
	// errors: where it comes from, such as "/Meas/IMU9/104" or "MeasIMU9".
	Transducer string
	// Rate is the sample rate in Hz, at most MaxRate; FitRate sets it for
	// a stream whose source does not say.
	Rate float64
	// Channels are the stream's signals, one a value of each row.
	Channels []Channel

	chunks []chunk
	values []float64 // the rows, one after the other
}

// Channel is one signal of a stream.
type Channel struct {
	Label string // such as "IMU9 Gyro z"
	Unit  string // physical dimension, such as "deg/s"
}

// chunk is rows that came together: the first at device time ms, the
// others one sample period after each other.
type chunk struct {
	ms    float64
	first int // row index
}

// note is an event: at onset from the file's start, or at device time ms.
type note struct {
	onset  time.Duration
	ms     float64
	device bool
	text   string
}

// MaxRate is the highest sample rate a Builder's stream may have, and
// MaxGap the longest stretch of a stream's time line that a Builder fills:
// a stream that starts later than the first, or whose timestamps jump
// further ahead (a device reset, a clock set), is refused, as is one whose
// timestamps go back.
const (
	MaxRate = 10000.0
	MaxGap  = 10 * time.Minute
)

// Stream returns the stream with key, and whether it is new: a new stream
// is empty and comes after those made before; the caller sets its Name,
// Transducer, Rate and Channels before adding rows.
func (b *Builder) Stream(key string) (s *Stream, isNew bool) {
	if s := b.byKey[key]; s != nil {
		return s, false
	}
	if b.byKey == nil {
		b.byKey = map[string]*Stream{}
	}
	s = &Stream{}
	b.byKey[key] = s
	b.streams = append(b.streams, s)
	return s, true
}

// Streams returns the streams in the order they were made.
func (b *Builder) Streams() []*Stream { return b.streams }

// Add appends rows of samples that came together, the first at device time
// ms and the others one sample period apart: values holds the rows one
// after the other, each with a value for every channel.
func (s *Stream) Add(ms float64, values []float64) error {
	if n := len(s.Channels); n == 0 || len(values)%n != 0 {
		return fmt.Errorf("%w: stream %s: %d values for %d channels; want whole rows", ErrInvalid, s.Transducer, len(values), n)
	}
	if len(values) == 0 {
		return nil
	}
	s.chunks = append(s.chunks, chunk{ms: ms, first: len(s.values) / len(s.Channels)})
	s.values = append(s.values, values...)
	return nil
}

// Adds returns how many times Add added rows to the stream.
func (s *Stream) Adds() int { return len(s.chunks) }

// MeasuredRate returns the rate the stream's timestamps give, 0 when they
// give none (fewer than two chunks at different times). Each step from one
// device time to the next later one gives the rows it holds over its
// time; the steps near the median step's rate (within a quarter of their
// time, and a millisecond more since timestamps are whole milliseconds)
// give the rate: their rows over their time. A step over records lost on
// the way (a busy device drops notifications) holds rows for a shorter
// time than it spans, and so does not slow the rate down.
func (s *Stream) MeasuredRate() float64 {
	type step struct{ rows, ms float64 }
	var steps []step
	from := 0
	for k := 1; k < len(s.chunks); k++ {
		c, f := s.chunks[k], s.chunks[from]
		switch {
		case c.ms > f.ms:
			steps = append(steps, step{float64(c.first - f.first), c.ms - f.ms})
			from = k
		case c.ms < f.ms: // the time went back: measure from here on
			from = k
		}
	}
	if len(steps) == 0 {
		return 0
	}
	rates := make([]float64, len(steps))
	for i, st := range steps {
		rates[i] = st.rows / st.ms
	}
	slices.Sort(rates)
	median := rates[len(rates)/2] // rows per ms
	var rows, ms float64
	for _, st := range steps {
		if want := st.rows / median; math.Abs(st.ms-want) <= want/4+1 {
			rows += st.rows
			ms += st.ms
		}
	}
	return rows / ms * 1000
}

// familyRates are the sample rates of the device family's streams.
var familyRates = []float64{13, 26, 52, 104, 125, 128, 200, 208, 250, 256, 416, 500, 512, 833, 1666}

// FitRate sets Rate for a stream whose source names no rate (a log): the
// family's rate nearest to MeasuredRate, within 5 %, or else the measured
// rate rounded. It reports false, leaving Rate, when the timestamps give
// no rate.
func (s *Stream) FitRate() bool {
	rate := s.MeasuredRate()
	if rate == 0 {
		return false
	}
	best := familyRates[0]
	for _, r := range familyRates {
		if math.Abs(r-rate) < math.Abs(best-rate) {
			best = r
		}
	}
	if math.Abs(best-rate) <= best*0.05 {
		s.Rate = best
	} else {
		s.Rate = math.Round(rate)
	}
	return true
}

// Anchor says that device time ms was utc: File's Start is then the UTC
// time of its first sample. Without it File leaves Start for the caller.
func (b *Builder) Anchor(utc time.Time, ms float64) {
	b.anchored, b.utc, b.deviceMs = true, utc, ms
}

// Annotate adds an event at onset from the start of the file.
func (b *Builder) Annotate(onset time.Duration, text string) {
	b.notes = append(b.notes, note{onset: onset, text: text})
}

// AnnotateAt adds an event at device time ms.
func (b *Builder) AnnotateAt(ms float64, text string) {
	b.notes = append(b.notes, note{ms: ms, device: true, text: text})
}

// lostAt is how many missing samples, at least, make a gap: two, or 2 ms
// of samples at high rates (timestamps are whole milliseconds).
func lostAt(rate float64) int { return max(2, int(math.Ceil(rate*0.002))) }

// File returns the File of the streams that have rows and of the events,
// with Recording "X X senseboard"; it refuses a File without a sampled
// stream, a stream whose rate is not above 0 and at most MaxRate, a
// stream whose time line has a gap longer than MaxGap, and a stream whose
// timestamps go back by a gap or more (rows that overlap rows before them).
func (b *Builder) File() (*File, error) {
	var sampled []*Stream
	t0 := math.Inf(1)
	for _, s := range b.streams {
		if len(s.chunks) == 0 {
			continue
		}
		if !(s.Rate > 0 && s.Rate <= MaxRate) {
			return nil, fmt.Errorf("%w: stream %s: sample rate %g Hz; want more than 0 and at most %g Hz", ErrInvalid, s.Transducer, s.Rate, MaxRate)
		}
		sampled = append(sampled, s)
		for _, c := range s.chunks {
			t0 = min(t0, c.ms)
		}
	}
	if len(sampled) == 0 {
		return nil, fmt.Errorf("%w: no sampled stream to export", ErrInvalid)
	}
	f := &File{Recording: "X X senseboard"}
	if b.anchored {
		f.Start = b.utc.Add(time.Duration((t0 - b.deviceMs) * float64(time.Millisecond)))
	}
	at := func(ms float64) time.Duration { return time.Duration(max(0, ms) * float64(time.Millisecond)) }
	for _, s := range sampled {
		width := len(s.Channels)
		rows := len(s.values) / width
		cols := make([][]float64, width)
		for c := range cols {
			cols[c] = make([]float64, 0, rows)
		}
		maxFill := int(MaxGap.Seconds() * s.Rate)
		// what the gaps may fill in all: MaxGap's worth, or as many
		// samples as the stream holds, so that a stream of many short
		// records far apart cannot make the file grow without bound
		limit := max(maxFill, rows)
		budget := limit
		for k, c := range s.chunks {
			end := rows
			if k+1 < len(s.chunks) {
				end = s.chunks[k+1].first
			}
			idx := int(math.Round((c.ms - t0) * s.Rate / 1000))
			n := len(cols[0])
			switch missing := idx - n; {
			case missing > maxFill && n == 0:
				return nil, fmt.Errorf("%w: stream %s starts %v after the first; an EDF+ file has one time line, and a stream may start at most %v later",
					ErrInvalid, s.Transducer, at(c.ms-t0), MaxGap)
			case missing > maxFill:
				return nil, fmt.Errorf("%w: stream %s jumps %.0f s ahead at its sample %d (from %.0f ms to %.0f ms, device time); an EDF+ file has one time line, and gaps of at most %v are filled",
					ErrInvalid, s.Transducer, float64(missing)/s.Rate, c.first+1, t0+float64(n)*1000/s.Rate, c.ms, MaxGap)
			case missing <= -lostAt(s.Rate):
				return nil, fmt.Errorf("%w: stream %s goes back %d samples at its sample %d (to %.0f ms from %.0f ms expected, device time), overlapping the samples before it; an EDF+ file has one time line (was the device reset or its clock set?)",
					ErrInvalid, s.Transducer, -missing, c.first+1, c.ms, t0+float64(n)*1000/s.Rate)
			case n == 0: // pad the start with the first sample
				for ch := range cols {
					for range missing {
						cols[ch] = append(cols[ch], s.values[c.first*width+ch])
					}
				}
			case missing >= lostAt(s.Rate) && missing > budget:
				return nil, fmt.Errorf("%w: stream %s: its gaps would fill more than %d samples; gaps are filled with at most as many samples as the stream holds (%d), or %v's worth",
					ErrInvalid, s.Transducer, limit, rows, MaxGap)
			case missing >= lostAt(s.Rate):
				budget -= missing
				f.Annotations = append(f.Annotations, Annotation{Onset: at(float64(n) * 1000 / s.Rate),
					Text: fmt.Sprintf("%s: %d samples lost", s.Name, missing)})
				for ch := range cols {
					last := cols[ch][n-1]
					for range missing {
						cols[ch] = append(cols[ch], last)
					}
				}
			}
			for r := c.first; r < end; r++ {
				for ch := range cols {
					cols[ch] = append(cols[ch], s.values[r*width+ch])
				}
			}
		}
		for ch, samples := range cols {
			sig := Signal{Label: s.Channels[ch].Label, Unit: s.Channels[ch].Unit, Transducer: s.Transducer, Rate: s.Rate, Samples: samples}
			sig.Fit()
			f.Signals = append(f.Signals, sig)
		}
	}
	for _, n := range b.notes {
		onset := max(0, n.onset)
		if n.device {
			onset = at(n.ms - t0)
		}
		f.Annotations = append(f.Annotations, Annotation{Onset: onset, Text: n.text})
	}
	return f, nil
}

// SensorChannel returns the label and unit of one axis of a motion
// quantity (Acc, Gyro or Magn, in any case) of a stream, or of ECG, as the
// product's EDF+ exports name them: "ECG" in mV; "Acc x" when the stream
// is the quantity's own; "IMU9 Gyro z" when it carries several.
//
// The units are the physical dimensions of EDF+'s standard texts: SI
// symbols and the degree written "deg", in ASCII, combined with "/" and
// powers written as digits: m/s2 for acceleration, deg/s for angular
// rate (not "dps", which no reader knows as a unit) and uT for the
// magnetic field.
func SensorChannel(stream, quantity, axis string) Channel {
	q := strings.ToLower(quantity)
	if q == "ecg" {
		return Channel{Label: "ECG", Unit: "mV"}
	}
	name, unit := quantity, ""
	switch q {
	case "acc":
		name, unit = "Acc", "m/s2"
	case "gyro":
		name, unit = "Gyro", "deg/s"
	case "magn":
		name, unit = "Magn", "uT"
	}
	if strings.EqualFold(stream, quantity) {
		return Channel{Label: name + " " + axis, Unit: unit}
	}
	return Channel{Label: stream + " " + name + " " + axis, Unit: unit}
}
