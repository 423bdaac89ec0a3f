package wfdb

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
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

// EncodeAnnotations takes every value the format holds and refuses the
// others; an increment that fits a word goes in the word.
func TestEncodeAnnotationsLimits(t *testing.T) {
	for _, anns := range [][]Annotation{
		{{Sample: 1, Code: 49, Aux: strings.Repeat("x", 255)}},
		{{Sample: 1, Code: 1, Sub: -128, Chan: 255, Num: -128}, {Sample: 2, Code: 1, Sub: 127, Num: 127}},
		{{Sample: math.MaxInt32, Code: 1}},
	} {
		atr, err := EncodeAnnotations(anns)
		if err != nil {
			t.Errorf("%.60v: %v", anns, err)
			continue
		}
		if got, err := ParseAnnotations(atr); err != nil || !reflect.DeepEqual(got, anns) {
			t.Errorf("%.60v: read back %.60v, %v", anns, got, err)
		}
	}
	for _, bad := range []Annotation{
		{Code: 50}, {Code: 1, Sub: -129}, {Code: 1, Sub: 128}, {Code: 1, Chan: -1}, {Code: 1, Chan: 256},
		{Code: 1, Num: -129}, {Code: 1, Num: 128}, {Code: 1, Aux: strings.Repeat("x", 256)}, {Sample: math.MaxInt32 + 1, Code: 1},
	} {
		if _, err := EncodeAnnotations([]Annotation{bad}); err == nil {
			t.Errorf("%.60v: no error", bad)
		}
	}
	if atr, err := EncodeAnnotations([]Annotation{{Sample: 1023, Code: 1}}); err != nil || !bytes.Equal(atr, []byte{0xFF, 0x07, 0, 0}) {
		t.Errorf("an increment of 1023: % x, %v; want ff 07 00 00", atr, err)
	}
}

// pack212 packs what Decode212 unpacks, clipped, an odd count completed
// with a zero.
func TestPack212(t *testing.T) {
	for _, tt := range []struct {
		in   []int
		want []byte
	}{
		{[]int{1, -1, 2047, -2048}, []byte{0x01, 0xF0, 0xFF, 0xFF, 0x87, 0x00}},
		{[]int{5000, -5000, 5}, []byte{0xFF, 0x87, 0x00, 0x05, 0x00, 0x00}},
		{nil, []byte{}},
	} {
		if got := pack212(tt.in); !bytes.Equal(got, tt.want) {
			t.Errorf("%v: % x, want % x", tt.in, got, tt.want)
		}
	}
}

// The header is WFDB's, with the first sample and the checksum of the
// signal, and a record of no samples or annotations is written whole.
func TestWriteHeader(t *testing.T) {
	for _, tt := range []struct {
		rec  Record
		hea  string
		size int // of the .dat
	}{
		{Record{Name: "r", Rate: 360, Samples: []float64{0.5, -0.25, math.NaN()}, Comments: []string{"a\nb"}},
			"r 1 360 3\nr.dat 212 200(0)/mV 12 0 100 -1998 0 ECG\n# a b\n", 6},
		{Record{Name: "r", Rate: 128.5, Gain: 1000.25, Description: "ECG I", Samples: []float64{-1}},
			"r 1 128.5 1\nr.dat 212 1000.25(0)/mV 12 0 -1000 -1000 0 ECG I\n", 3},
		{Record{Name: "r", Rate: 1}, "r 1 1 0\nr.dat 212 200(0)/mV 12 0 0 0 0 ECG\n", 0},
	} {
		dir := t.TempDir()
		if err := Write(dir, &tt.rec); err != nil {
			t.Fatal(err)
		}
		hea, _ := os.ReadFile(filepath.Join(dir, "r.hea"))
		dat, err := os.ReadFile(filepath.Join(dir, "r.dat"))
		if string(hea) != tt.hea || err != nil || len(dat) != tt.size {
			t.Errorf("%+v:\n%s, %d bytes of data, %v; want\n%s, %d", tt.rec, hea, len(dat), err, tt.hea, tt.size)
		}
		if _, err := os.Stat(filepath.Join(dir, "r.atr")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%+v: an annotation file without annotations: %v", tt.rec, err)
		}
	}
}

// Write reports what it could not write: a file that cannot be made, or
// a full disk.
func TestWriteFails(t *testing.T) {
	dir := t.TempDir()
	rec := &Record{Name: "r", Rate: 360, Samples: []float64{1}, Annotations: []Annotation{{Code: CodeNormal}}}
	if err := os.Mkdir(filepath.Join(dir, "r.atr"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, rec); err == nil {
		t.Error("the annotation file could not be made, and no error")
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full to fill")
	}
	dir = t.TempDir()
	if err := os.Symlink("/dev/full", filepath.Join(dir, "r.hea")); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, rec); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("writing to a full disk: %v, want ENOSPC", err)
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
	for _, bad := range []Record{{Name: "../x", Rate: 1}, {Rate: 1}, {Name: "x", Rate: 0}, {Name: "x", Rate: 1e6}} {
		if err := Write(dir, &bad); err == nil {
			t.Errorf("%+v was written", bad)
		}
	}
	if err := Write(filepath.Join(dir, "missing"), rec); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("writing into a missing directory: %v", err)
	}
}
