package replay

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
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

func TestWriteWFDBReadsBack(t *testing.T) {
	dir := t.TempDir()
	rec := &WFDBRecord{Name: "sb_1", Rate: 360, Samples: make([]float64, 3601)}
	for i := range rec.Samples {
		rec.Samples[i] = 1.5 * math.Sin(float64(i)/20)
	}
	rec.Samples[7] = math.NaN()
	rec.Samples[8] = 50 // clipped to the 12-bit range
	for k := range 10 {
		rec.Annotations = append(rec.Annotations, Annotation{Sample: int64(k * 360), Code: CodeNormal})
	}
	if err := WriteWFDB(dir, rec); err != nil {
		t.Fatal(err)
	}
	r, err := Load(filepath.Join(dir, "sb_1.hea"))
	if err != nil {
		t.Fatal(err)
	}
	s := r.Series[ECG]
	if s == nil || s.Rate != 360 || s.Len() != len(rec.Samples) {
		t.Fatalf("read back %+v", s)
	}
	for i, v := range s.Axes[0] {
		want := rec.Samples[i]
		switch {
		case i == 7:
			if !math.IsNaN(v) {
				t.Errorf("sample 7: %g, want missing", v)
			}
		case i == 8:
			if v != 2047.0/200 {
				t.Errorf("sample 8: %g, want the clipped %g", v, 2047.0/200)
			}
		case math.Abs(v-want) > 0.5/200+1e-12:
			t.Fatalf("sample %d: %g, want %g", i, v, want)
		}
	}
	if len(r.Beats) != 10 || r.Beats[3] != 3*time.Second {
		t.Errorf("beats %v", r.Beats)
	}
	if err := WriteWFDB(dir, &WFDBRecord{Name: "../x", Rate: 1}); err == nil {
		t.Error("a record name with a path was accepted")
	}
	if err := WriteWFDB(filepath.Join(dir, "missing"), rec); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("writing into a missing directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sb_1.atr")); err != nil {
		t.Error(err)
	}
}
