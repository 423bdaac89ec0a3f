// Package truth exports the wearer model's ECG with its true beats, so
// researchers can score their own detectors against the truth: as a WFDB
// record (a format 212 signal file, a header and an annotation file of beat
// and rhythm annotations) and as an EDF+ file with the beats and rhythms in
// its annotation signal.
package truth

import (
	"fmt"
	"math"
	"time"

	"senseboard/edf"
	"senseboard/sensor"
	"senseboard/wfdb"
	"senseboard/world"
)

// Span is the stretch of the model to export, in clock readings, at a rate.
type Span struct {
	From, To time.Duration
	Rate     float64 // samples per second
}

// Beat annotation text: the WFDB mnemonics.
var beatText = map[world.BeatKind]string{world.Normal: "N", world.Ventricular: "V", world.AtrialPremature: "A"}
var beatCode = map[world.BeatKind]int{world.Normal: wfdb.CodeNormal, world.Ventricular: wfdb.CodeVentricular, world.AtrialPremature: wfdb.CodeAtrial}

// rhythmText is the MIT-BIH rhythm label of each rhythm.
var rhythmText = map[world.Rhythm]string{world.Sinus: "(N", world.AtrialFibrillation: "(AFIB", world.Bradycardia: "(SBR", world.Tachycardia: "(SVTA"}

// samples renders the model's ECG over s, in mV at the electrodes.
func samples(m *sensor.Model, s Span) ([]float64, error) {
	if !(s.Rate > 0 && s.Rate <= 10000) || s.To <= s.From {
		return nil, fmt.Errorf("truth: span %v..%v at %g Hz: want From < To and a rate up to 10 kHz", s.From, s.To, s.Rate)
	}
	n := int((s.To - s.From).Seconds() * s.Rate)
	if n > 100_000_000 {
		return nil, fmt.Errorf("truth: %d samples; at most 100000000", n)
	}
	dt := time.Duration(float64(time.Second) / s.Rate)
	x := make([]float64, n)
	const chunk = 4096
	for i := 0; i < n; i += chunk {
		m.FillECG(x[i:min(i+chunk, n)], s.From+time.Duration(i)*dt, dt)
	}
	return x, nil
}

// Annotations returns the WFDB annotations of the model's beats in s: a
// rhythm annotation ("(N", "(AFIB", "(SBR", "(SVTA") at the first beat and
// at each change of rhythm, then each beat as N, V or A at its R peak's
// sample (counted from s.From).
func Annotations(m *sensor.Model, s Span) []wfdb.Annotation {
	var out []wfdb.Annotation
	rhythm := world.Rhythm(255)
	for _, b := range m.Beats(s.From, s.To) {
		k := int64(math.Round((b.At - s.From).Seconds() * s.Rate))
		if b.Rhythm != rhythm {
			out = append(out, wfdb.Annotation{Sample: k, Code: wfdb.CodeRhythm, Aux: rhythmText[b.Rhythm]})
			rhythm = b.Rhythm
		}
		out = append(out, wfdb.Annotation{Sample: k, Code: beatCode[b.Kind]})
	}
	return out
}

// WriteWFDB writes the model's ECG over s as the WFDB record dir/name
// (.hea, .dat in format 212 at 200 units per mV, .atr with the true beats
// and rhythms).
func WriteWFDB(dir, name string, m *sensor.Model, s Span) error {
	x, err := samples(m, s)
	if err != nil {
		return err
	}
	return wfdb.Write(dir, &wfdb.Record{
		Name: name, Rate: s.Rate, Description: "ECG", Samples: x,
		Annotations: Annotations(m, s),
		Comments:    []string{fmt.Sprintf("senseboard wearer model, from %v to %v of device time", s.From, s.To)},
	})
}

// EDF returns the model's ECG over s as an EDF+ recording (±10 mV over the
// 16-bit range) whose annotations are the true beats ("N", "V", "A" at each
// R peak) and rhythm episodes ("(AFIB" and so on, with their durations). The
// rate must be a whole number of samples per second. start is the wall
// time of s.From.
func EDF(m *sensor.Model, s Span, start time.Time) (*edf.File, error) {
	x, err := samples(m, s)
	if err != nil {
		return nil, err
	}
	f := &edf.File{
		Recording: "X X senseboard",
		Start:     start,
		Signals: []edf.Signal{{
			Label: "ECG", Transducer: "senseboard wearer model", Unit: "mV",
			PhysicalMin: -10, PhysicalMax: 10, DigitalMin: -32768, DigitalMax: 32767,
			Rate: s.Rate, Samples: x,
		}},
	}
	beats := m.Beats(s.From, s.To)
	var runFrom time.Duration
	rhythm := world.Rhythm(255)
	endRun := func(to time.Duration) {
		if rhythm != world.Rhythm(255) {
			f.Annotations = append(f.Annotations, edf.Annotation{Onset: runFrom, Duration: to - runFrom, Text: rhythmText[rhythm]})
		}
	}
	for _, b := range beats {
		at := b.At - s.From
		if b.Rhythm != rhythm {
			endRun(at)
			runFrom, rhythm = at, b.Rhythm
		}
		f.Annotations = append(f.Annotations, edf.Annotation{Onset: at, Text: beatText[b.Kind]})
	}
	endRun(s.To - s.From)
	return f, nil
}

// WriteEDF writes EDF's recording to path.
func WriteEDF(path string, m *sensor.Model, s Span, start time.Time) error {
	f, err := EDF(m, s, start)
	if err != nil {
		return err
	}
	return edf.WriteFile(path, f)
}
