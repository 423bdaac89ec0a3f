package wfdb

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseHeaderErrors(t *testing.T) {
	headers := []struct{ header, msg string }{
		{"r 2 360\nr.dat 212 200\n", "announces 2 signals"},
		{"r 1 360\nr.dat x\n", `line 2: format "x"`},
		{"r 1 360\nr.dat :4\n", `line 2: format ":4"`},
		{"r 1 360\nr.dat\n", "line 2: want file name and format"},
		{"r 0\n", "number of signals"},
		{"# only a comment\n", "no record line"},
	}
	for _, tt := range headers {
		if _, err := ParseHeader([]byte(tt.header)); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("header %q: %v, want %q", tt.header, err, tt.msg)
		}
	}
	if h, err := ParseHeader([]byte("r 1 360\nr.dat 212x2:1+0 200\n")); err != nil || h.Signals[0].Format != 212 {
		t.Errorf("format with samples per frame, skew and offset: %+v %v", h, err)
	}
}

func TestDecode212(t *testing.T) {
	// samples 1, -1 / 2047, -2048 packed two to three bytes
	dat := []byte{0x01, 0xF0, 0xFF, 0xFF, 0x87, 0x00}
	a, _ := Decode212(dat, 1, 0)
	if fmt.Sprint(a) != "[1 -1 2047 -2048]" {
		t.Errorf("one signal: %v", a)
	}
	s0, _ := Decode212(dat, 2, 0)
	s1, _ := Decode212(dat, 2, 1)
	if fmt.Sprint(s0, s1) != "[1 2047] [-1 -2048]" {
		t.Errorf("two signals: %v %v", s0, s1)
	}
}

// FuzzParseHeader: a header that parses describes as many signals as it
// announces, each of a file and a format.
func FuzzParseHeader(f *testing.F) {
	f.Add([]byte("100s 2 360 4\n100s.dat 212 200 11 1024 995 0 0 MLII\n100s.dat 212 200 11 1024 1011 0 0 V5\n"))
	f.Add([]byte("r 1 360\nr.dat 212x2:1+0 200\n"))
	f.Add([]byte("# only a comment\n"))
	f.Fuzz(func(t *testing.T, hea []byte) {
		h, err := ParseHeader(hea)
		if err != nil {
			return
		}
		if len(h.Signals) == 0 {
			t.Fatalf("%q: a header of no signals", hea)
		}
		for i, s := range h.Signals {
			if s.File == "" {
				t.Fatalf("%q: signal %d without a file", hea, i)
			}
		}
	})
}

func FuzzParseAnnotations(f *testing.F) {
	f.Add([]byte{0x01, 0x04, 0x00, 0x00})
	f.Add([]byte{0x05, 0x70, 0x04, 0xFC, '(', 'V', 'F', 'L', 0x00, 0x00})
	f.Fuzz(func(t *testing.T, atr []byte) {
		anns, err := ParseAnnotations(atr)
		if err != nil {
			return
		}
		for i, a := range anns {
			if a.Sample < 0 {
				t.Fatalf("annotation %d at negative sample %d", i, a.Sample)
			}
		}
	})
}
