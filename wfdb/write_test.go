package wfdb

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestAnnotationsRoundTrip(t *testing.T) {
	anns := []Annotation{
		{Sample: 0, Code: CodeRhythm, Aux: "(N"},
		{Sample: 0, Code: CodeNormal},
		{Sample: 300, Code: CodeVentricular},
		{Sample: 5000, Code: CodeRhythm, Aux: "(AFIB"},
		{Sample: 5000, Code: CodeNormal, Sub: 2},
		{Sample: 5001, Code: CodeAtrial, Chan: 1},
		{Sample: 200000, Code: CodeNoise, Sub: -1, Num: 3},
		{Sample: 200001, Code: CodeNormal, Num: 3, Chan: 1},
	}
	atr, err := EncodeAnnotations(anns)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseAnnotations(atr)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, anns) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, anns)
	}
	for _, bad := range [][]Annotation{
		{{Sample: 10, Code: 1}, {Sample: 5, Code: 1}},
		{{Sample: 1, Code: 0}},
		{{Sample: 1, Code: 1, Aux: strings.Repeat("x", 300)}},
	} {
		if _, err := EncodeAnnotations(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

func TestWriteReadsBack(t *testing.T) {
	dir := t.TempDir()
	rec := &Record{Name: "sb_1", Rate: 360, Samples: make([]float64, 3601)}
	for i := range rec.Samples {
		rec.Samples[i] = 1.5 * math.Sin(float64(i)/20)
	}
	rec.Samples[7] = math.NaN()
	rec.Samples[8] = 50 // clipped to the 12-bit range
	for k := range 10 {
		rec.Annotations = append(rec.Annotations, Annotation{Sample: int64(k * 360), Code: CodeNormal})
	}
	if err := Write(dir, rec); err != nil {
		t.Fatal(err)
	}
	read := func(ext string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "sb_1"+ext))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	h, err := ParseHeader(read(".hea"))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Signals) != 1 || h.Rate != 360 || h.Samples != len(rec.Samples) || h.Signals[0].Format != 212 {
		t.Fatalf("header %+v", h)
	}
	adu, err := Decode212(read(".dat"), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(adu) < len(rec.Samples) {
		t.Fatalf("%d samples, want %d", len(adu), len(rec.Samples))
	}
	sig := h.Signals[0]
	for i, want := range rec.Samples {
		v := float64(adu[i]-sig.Baseline) / sig.Gain
		switch {
		case i == 7:
			if adu[i] != -2048 {
				t.Errorf("sample 7: %d, want the missing sample's -2048", adu[i])
			}
		case i == 8:
			if v != 2047.0/200 {
				t.Errorf("sample 8: %g, want the clipped %g", v, 2047.0/200)
			}
		case math.Abs(v-want) > 0.5/200+1e-12:
			t.Fatalf("sample %d: %g, want %g", i, v, want)
		}
	}
	if beats, err := Beats(read(".atr")); err != nil || len(beats) != 10 || beats[3] != 3*360 {
		t.Errorf("beats %v, %v", beats, err)
	}
	if err := Write(dir, &Record{Name: "../x", Rate: 1}); err == nil {
		t.Error("a record name with a path was accepted")
	}
	if err := Write(filepath.Join(dir, "missing"), rec); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("writing into a missing directory: %v", err)
	}
}
