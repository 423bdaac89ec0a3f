package edf

import (
	"bytes"
	"cmp"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// sample returns a small recording: an ECG at 256 Hz, an acceleration at
// 13 Hz over records of 1 s, and beat annotations.
func sample() *File {
	f := &File{
		Patient:   "P-17 F 02-MAY-1951 X",
		Recording: "run-3 X senseboard",
		Start:     time.Date(2026, 11, 23, 20, 15, 42, 250e6, time.UTC),
		Signals: []Signal{
			{Label: "ECG", Unit: "mV", PhysicalMin: -5, PhysicalMax: 5, DigitalMin: -32768, DigitalMax: 32767, Prefilter: "HP:0.5Hz LP:40Hz", Rate: 256},
			{Label: "Acc X", Unit: "m/s2", PhysicalMin: -160, PhysicalMax: 160, DigitalMin: -2048, DigitalMax: 2047, Rate: 13},
		},
	}
	for i := range 256*3 + 100 { // three records and part of a fourth
		f.Signals[0].Samples = append(f.Signals[0].Samples, 1.2*math.Sin(float64(i)/9))
	}
	for i := range 40 {
		f.Signals[1].Samples = append(f.Signals[1].Samples, 9.81+float64(i)/7)
	}
	for i := range 5 {
		f.Annotations = append(f.Annotations, Annotation{Onset: time.Duration(i)*800*time.Millisecond + 123456789, Text: "N"})
	}
	f.Annotations = append(f.Annotations, Annotation{Onset: 2 * time.Second, Duration: 1500 * time.Millisecond, Text: "(AFIB électrode"})
	return f
}

func TestRoundTrip(t *testing.T) {
	f := sample()
	data, err := Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data[192:197]); got != "EDF+C" {
		t.Errorf("reserved field %q, want EDF+C", got)
	}
	g, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Start.Equal(f.Start) {
		t.Errorf("start %v, want %v", g.Start, f.Start)
	}
	if g.Patient != f.Patient || g.Recording != f.Recording {
		t.Errorf("identification %q %q, want %q %q", g.Patient, g.Recording, f.Patient, f.Recording)
	}
	if g.RecordDuration != time.Second {
		t.Errorf("record duration %v", g.RecordDuration)
	}
	if len(g.Signals) != 2 {
		t.Fatalf("%d signals", len(g.Signals))
	}
	for i, s := range f.Signals {
		r := g.Signals[i]
		if r.Label != s.Label || r.Unit != s.Unit || r.Rate != s.Rate || r.Prefilter != s.Prefilter {
			t.Errorf("signal %d: %+v", i, r)
		}
		want := (len(s.Samples) + int(s.Rate) - 1) / int(s.Rate) * int(s.Rate)
		if len(r.Samples) != want {
			t.Errorf("signal %d: %d samples, want %d (whole records)", i, len(r.Samples), want)
		}
		step := (s.PhysicalMax - s.PhysicalMin) / float64(s.DigitalMax-s.DigitalMin)
		for k := range r.Samples {
			w := s.Samples[min(k, len(s.Samples)-1)]
			if math.Abs(r.Samples[k]-w) > step {
				t.Fatalf("signal %d sample %d: %g, want %g within %g", i, k, r.Samples[k], w, step)
			}
		}
	}
	if len(g.Annotations) != len(f.Annotations) {
		t.Fatalf("annotations %v, want %v", g.Annotations, f.Annotations)
	}
	want := slices.Clone(f.Annotations)
	slices.SortStableFunc(want, func(a, b Annotation) int { return cmp.Compare(a.Onset, b.Onset) })
	for i, a := range want {
		if g.Annotations[i] != a {
			t.Errorf("annotation %d: %+v, want %+v", i, g.Annotations[i], a)
		}
	}
}

func TestWriteRefusesInvalid(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(*File)
		want   string
	}{
		{"rate not whole per record", func(f *File) { f.Signals[1].Rate = 12.5 }, "whole number"},
		{"digital range", func(f *File) { f.Signals[0].DigitalMax = 40000 }, "digital range"},
		{"physical range", func(f *File) { f.Signals[0].PhysicalMax = -5 }, "physical range"},
		{"label too long", func(f *File) { f.Signals[0].Label = "an electrocardiogram" }, "at most 16"},
		{"label not ASCII", func(f *File) { f.Signals[0].Label = "EKG ü" }, "printable ASCII"},
		{"annotation separator", func(f *File) { f.Annotations[0].Text = "a\x14b" }, "0x14"},
		{"negative onset", func(f *File) { f.Annotations[0].Onset = -time.Second }, "negative"},
		{"reserved label", func(f *File) { f.Signals[0].Label = "EDF Annotations" }, "reserved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := sample()
			tt.break_(f)
			_, err := Marshal(f)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v; want ErrInvalid naming %q", err, tt.want)
			}
		})
	}
}

func TestReadRefusesInvalid(t *testing.T) {
	good, err := Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	set := func(off int, s string) []byte {
		b := bytes.Clone(good)
		copy(b[off:], s)
		return b
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"short", good[:100], "header alone"},
		{"version", set(0, "1       "), "version"},
		{"signals", set(252, "0   "), "number of signals"},
		{"header size", set(184, "512     "), "header size"},
		{"records", set(236, "99      "), "data records"},
		{"date", set(168, "ab.cd.ef"), "start date"},
		{"truncated", good[:len(good)-10], "data records"},
		{"digital range", set(256+3*(16+80+8+8+8), "40000   "), "digital range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Unmarshal(tt.data)
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v; want ErrFormat naming %q", err, tt.want)
			}
		})
	}
}

func TestWriteFile(t *testing.T) {
	path := t.TempDir() + "/rec.edf"
	if err := WriteFile(path, sample()); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(t.TempDir()+"/no/such/dir/rec.edf", sample()); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

func FuzzUnmarshal(f *testing.F) {
	good, _ := Marshal(sample())
	f.Add(good)
	f.Add(good[:256])
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Unmarshal(data)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		// what was read writes again, when its values are writable
		_ = g
	})
}

// A start EDF cannot say (before 1985, or none) is written as 1 January
// 1985, with the annotations at their onsets from there.
func TestStartBefore1985(t *testing.T) {
	for _, start := range []time.Time{{}, time.Unix(0, 0).UTC(), time.UnixMicro(473_385_599_500_000).UTC()} {
		f := sample()
		f.Start = start
		b, err := Marshal(f)
		if err != nil {
			t.Fatalf("start %v: %v", start, err)
		}
		g, err := Unmarshal(b)
		if err != nil {
			t.Fatalf("start %v: %v", start, err)
		}
		if want := time.Date(1985, 1, 1, 0, 0, 0, 0, time.UTC); !g.Start.Equal(want) {
			t.Errorf("start %v read back as %v, want %v", start, g.Start, want)
		}
		if len(g.Annotations) != len(f.Annotations) || g.Annotations[0].Onset != f.Annotations[0].Onset {
			t.Errorf("start %v: annotations %+v, want %+v", start, g.Annotations, f.Annotations)
		}
	}
}
