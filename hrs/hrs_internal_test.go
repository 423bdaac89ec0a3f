package hrs

import (
	"fmt"
	"testing"

	"senseboard/content"
)

// A notification's RR intervals go MaxRR to a measurement, each with the
// average; an average above what the service takes goes as MaxAverage.
func TestMeasurements(t *testing.T) {
	many := make([]uint16, 2*MaxRR+1)
	for i := range many {
		many[i] = uint16(500 + i)
	}
	for _, tc := range []struct {
		name string
		in   content.HRData
		want string
	}{
		{"one beat", content.HRData{Average: 61.5, RRData: []uint16{975}}, "[{61.5 [975]}]"},
		{"no interval", content.HRData{Average: 0}, "[{0 []}]"},
		{"nine", content.HRData{Average: 70, RRData: many[:MaxRR]}, "[{70 [500 501 502 503 504 505 506 507 508]}]"},
		{"nineteen", content.HRData{Average: 70, RRData: many},
			"[{70 [500 501 502 503 504 505 506 507 508]} {70 [509 510 511 512 513 514 515 516 517]} {70 [518]}]"},
		{"too fast", content.HRData{Average: 300, RRData: []uint16{200}}, "[{255 [200]}]"},
	} {
		if got := fmt.Sprint(measurements(&tc.in)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
