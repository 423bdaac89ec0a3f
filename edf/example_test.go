package edf_test

import (
	"fmt"
	"time"

	"senseboard/edf"
)

// A recording of two seconds of ECG with two beat annotations, written and
// read back.
func Example() {
	f := &edf.File{
		Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Signals: []edf.Signal{{
			Label: "ECG", Unit: "mV", Rate: 128,
			PhysicalMin: -5, PhysicalMax: 5, DigitalMin: -32768, DigitalMax: 32767,
			Samples: make([]float64, 256),
		}},
		Annotations: []edf.Annotation{
			{Onset: 400 * time.Millisecond, Text: "N"},
			{Onset: 1250 * time.Millisecond, Text: "V"},
		},
	}
	data, err := edf.Marshal(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := edf.Unmarshal(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(data), "bytes;", g.Signals[0].Label, len(g.Signals[0].Samples), "samples at", g.Signals[0].Rate, "Hz")
	for _, a := range g.Annotations {
		fmt.Println(a.Onset, a.Text)
	}
	// Output:
	// 1408 bytes; ECG 256 samples at 128 Hz
	// 400ms N
	// 1.25s V
}
