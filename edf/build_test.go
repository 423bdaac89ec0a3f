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
