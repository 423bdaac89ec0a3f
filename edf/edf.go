// Package edf writes and reads EDF+ files (European Data Format, with the
// EDF+ extensions of Kemp and Olivan, 2003): signals sampled at fixed rates,
// stored as 16-bit integers with a linear map to physical units, and
// annotations (time-stamped text, such as beat types or events) in an "EDF
// Annotations" signal of time-stamped annotation lists (TALs).
//
// A File holds the whole recording in memory; Write encodes it as a
// continuous EDF+ file (EDF+C), and Read decodes EDF and EDF+ files,
// checking every field. A Builder makes a File of timestamped streams on
// one time line, and SensorChannel names the device's quantities and
// their units, alike in every export.
package edf

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// File is an EDF+ recording.
type File struct {
	// Patient is the EDF+ patient identification: code, sex (F or M), birth
	// date (dd-MMM-yyyy) and name, separated by spaces, with "X" for what
	// is unknown and no spaces inside a field ("X X X X" when empty).
	Patient string
	// Recording is the EDF+ recording identification after "Startdate
	// dd-MMM-yyyy": admin code, technician, equipment ("X X X" when empty).
	Recording string
	// Start is the start of the recording; EDF keeps it to the second (the
	// rest goes into the first record's time-keeping annotation). A start
	// before 1985, the first year EDF can say (a device whose clock was
	// never set says 1970), or none, is written as 1 January 1985.
	Start time.Time
	// RecordDuration is the length of one data record (1 s when zero). Each
	// signal's rate times it must be a whole number of samples.
	RecordDuration time.Duration
	// Signals are the ordinary signals (not the annotations).
	Signals []Signal
	// Annotations are the recording's events, in any order.
	Annotations []Annotation
}

// Signal is one sampled signal.
type Signal struct {
	Label       string  // up to 16 characters, such as "ECG"
	Transducer  string  // up to 80 characters, such as "AgAgCl electrodes"
	Unit        string  // physical dimension, up to 8 characters, such as "mV"
	PhysicalMin float64 // the physical value of DigitalMin
	PhysicalMax float64 // the physical value of DigitalMax
	DigitalMin  int     // from -32768
	DigitalMax  int     // to 32767, above DigitalMin
	Prefilter   string  // up to 80 characters, such as "HP:0.5Hz LP:40Hz"
	// Rate is the sample rate in Hz.
	Rate float64
	// Samples are the physical values. Values outside the physical range
	// are clipped to it; a last, incomplete data record is completed with
	// the last sample.
	Samples []float64
}

// Annotation is an event of the recording.
type Annotation struct {
	Onset    time.Duration // from the start of the recording
	Duration time.Duration // 0 when the event has no duration
	Text     string        // UTF-8, without the bytes 0x14, 0x15 and 0x00
}

// Errors a Read returns, wrapped with the details.
var (
	// ErrFormat is returned for a file that is not EDF or EDF+.
	ErrFormat = errors.New("edf: not a valid EDF file")
)

// Errors a Write returns, wrapped with the details.
var (
	// ErrInvalid is returned for a File that cannot be written.
	ErrInvalid = errors.New("edf: invalid recording")
)

// Fit sets the physical range of s to that of its samples (widened by 1 on
// each side when they are all the same) and its digital range to the full
// 16 bits, so that the samples keep all the precision EDF has.
func (s *Signal) Fit() {
	var lo, hi float64
	if len(s.Samples) > 0 {
		lo, hi = slices.Min(s.Samples), slices.Max(s.Samples)
	}
	if hi-lo < 1e-6 {
		lo, hi = lo-1, hi+1
	}
	s.PhysicalMin, s.PhysicalMax = lo, hi
	s.DigitalMin, s.DigitalMax = -32768, 32767
}

// Digital returns the digital value of physical value v of s, clipped to the
// digital range.
func (s *Signal) Digital(v float64) int {
	if math.IsNaN(v) {
		return s.DigitalMin
	}
	d := (v-s.PhysicalMin)*float64(s.DigitalMax-s.DigitalMin)/(s.PhysicalMax-s.PhysicalMin) + float64(s.DigitalMin)
	d = math.Round(d)
	return int(math.Max(float64(s.DigitalMin), math.Min(float64(s.DigitalMax), d)))
}

// Physical returns the physical value of digital value d of s.
func (s *Signal) Physical(d int) float64 {
	return s.PhysicalMin + float64(d-s.DigitalMin)*(s.PhysicalMax-s.PhysicalMin)/float64(s.DigitalMax-s.DigitalMin)
}

// recordDuration returns the data record length, 1 s by default.
func (f *File) recordDuration() time.Duration {
	if f.RecordDuration <= 0 {
		return time.Second
	}
	return f.RecordDuration
}

// perRecord returns how many samples of s one data record holds.
func perRecord(rate float64, rec time.Duration) (int, error) {
	n := rate * rec.Seconds()
	k := math.Round(n)
	if math.Abs(n-k) > 1e-6 || k < 1 {
		return 0, fmt.Errorf("%w: a rate of %g Hz gives %g samples per %v record; a whole number (at least 1) is needed", ErrInvalid, rate, n, rec)
	}
	return int(k), nil
}

// Label is the label of the annotation signal.
const annotationsLabel = "EDF Annotations"
