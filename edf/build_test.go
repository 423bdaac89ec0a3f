package edf_test

import (
	"errors"
	"strings"
	"testing"

	"senseboard/edf"
)

// Timestamps that go back (a reset, a clock set, rows sent twice) are
// refused, naming the stream and the sample; a step back of less than a
// gap is timestamp rounding and is kept.
func TestBuilderOverlap(t *testing.T) {
	for _, tt := range []struct {
		name   string
		second float64 // device time of the second chunk, after 4 rows at 0 ms of 100 Hz
		want   string  // in the error; "" for none
		rows   int
	}{
		{"in step", 40, "", 8},
		{"rounding back", 31, "", 8},
		{"overlap", 20, "stream /Meas/Acc/100 goes back 2 samples at its sample 5 (to 20 ms from 40 ms expected", 0},
		{"reset", 0, "goes back 4 samples at its sample 5", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b edf.Builder
			s, _ := b.Stream("acc")
			s.Name, s.Transducer, s.Rate = "Acc", "/Meas/Acc/100", 100
			s.Channels = []edf.Channel{{Label: "Acc x", Unit: "m/s2"}}
			if err := s.Add(0, []float64{1, 2, 3, 4}); err != nil {
				t.Fatal(err)
			}
			if err := s.Add(tt.second, []float64{5, 6, 7, 8}); err != nil {
				t.Fatal(err)
			}
			f, err := b.File()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := len(f.Signals[0].Samples); got != tt.rows || len(f.Annotations) != 0 {
					t.Errorf("%d samples, annotations %v; want %d and none", got, f.Annotations, tt.rows)
				}
				return
			}
			if !errors.Is(err, edf.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v; want ErrInvalid with %q", err, tt.want)
			}
		})
	}
}

// TestBuilderFillBudget: the gaps of a stream are filled with at most as
// many samples as it holds, or MaxGap's worth, so that records far apart
// cannot make a file grow without bound; within that, every gap is filled.
func TestBuilderFillBudget(t *testing.T) {
	const rate = 1000.0
	maxGapMs := float64(edf.MaxGap.Milliseconds())
	for _, tc := range []struct {
		name    string
		records int     // records of 10 samples
		apart   float64 // ms from one record's start to the next's
		ok      bool
	}{
		{"no gaps", 100, 10, true},
		{"one long gap", 2, maxGapMs - 1000, true},
		{"many gaps within MaxGap in all", 20, maxGapMs / 20, true},
		{"many long gaps", 20, maxGapMs / 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b edf.Builder
			s, _ := b.Stream("ecg")
			s.Name, s.Transducer, s.Rate = "ECG", "/Meas/ECG/1000", rate
			s.Channels = []edf.Channel{edf.SensorChannel("ECG", "ECG", "")}
			for i := range tc.records {
				if err := s.Add(float64(i)*tc.apart, make([]float64, 10)); err != nil {
					t.Fatal(err)
				}
			}
			f, err := b.File()
			if !tc.ok {
				if !errors.Is(err, edf.ErrInvalid) {
					t.Fatalf("File: %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := int(float64(tc.records-1)*tc.apart*rate/1000) + 10
			if got := len(f.Signals[0].Samples); got != want {
				t.Errorf("%d samples, want %d", got, want)
			}
		})
	}
}

// A stream measures its rate from the steps between its Adds at
// different times, leaving out the steps over lost Adds and back in time;
// Adds counts the Adds that brought rows, so a caller can say why a stream
// has no rate.
func TestStreamMeasuredRate(t *testing.T) {
	for _, tc := range []struct {
		name string
		adds []float64 // device times in ms, each with 2 rows; -1 for an Add of no rows
		rate float64
		n    int
	}{
		{"none", nil, 0, 0},
		{"one", []float64{0}, 0, 1},
		{"two at one time", []float64{5, 5}, 0, 2},
		{"two 20 ms apart", []float64{0, 20}, 100, 2},
		{"three with an empty one", []float64{0, -1, 20, 40}, 100, 3},
		{"two lost between", []float64{0, 20, 40, 100, 120}, 100, 5},
		{"whole milliseconds", []float64{0, 12, 25, 37, 50, 62, 75}, 160, 7},
		{"a step back", []float64{500, 520, 0, 20, 40}, 100, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b edf.Builder
			s, _ := b.Stream("acc")
			s.Transducer = "/Meas/Acc/100"
			s.Channels = []edf.Channel{{Label: "Acc x", Unit: "m/s2"}}
			for _, ms := range tc.adds {
				rows := []float64{1, 2}
				if ms < 0 {
					ms, rows = 0, nil
				}
				if err := s.Add(ms, rows); err != nil {
					t.Fatal(err)
				}
			}
			if got := s.MeasuredRate(); got != tc.rate || s.Adds() != tc.n {
				t.Errorf("rate %v after %d Adds with rows; want %v after %d", got, s.Adds(), tc.rate, tc.n)
			}
		})
	}
}

// FitRate takes the family's rate nearest to the measured one, within
// 5 %, the measured rate rounded otherwise, and none from timestamps that
// give none.
func TestStreamFitRate(t *testing.T) {
	for _, tc := range []struct {
		name string
		span float64 // ms between the two Adds of 8 rows each; 0 for one Add
		rate float64 // 0: FitRate reports false
	}{
		{"one Add", 0, 0},
		{"52 Hz a little fast", 8000.0 / 53, 52},
		{"208 Hz a little slow", 8000.0 / 205, 208},
		{"no family rate near", 8000.0 / 70, 70},
		{"1666 Hz", 8000.0 / 1666, 1666},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b edf.Builder
			s, _ := b.Stream("acc")
			s.Channels = []edf.Channel{{Label: "Acc x", Unit: "m/s2"}}
			s.Add(0, make([]float64, 8))
			if tc.span > 0 {
				s.Add(tc.span, make([]float64, 8))
			}
			ok := s.FitRate()
			if ok != (tc.rate != 0) || ok && s.Rate != tc.rate {
				t.Errorf("FitRate %v, rate %v; want %v", ok, s.Rate, tc.rate)
			}
		})
	}
}
