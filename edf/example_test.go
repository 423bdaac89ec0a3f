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

// Two streams on one time line: the gyroscope starts 100 ms after the
// accelerometer and is padded; the accelerometer loses three samples.
func ExampleBuilder() {
	var b edf.Builder
	acc, _ := b.Stream("/Meas/Acc/10")
	acc.Name, acc.Transducer, acc.Rate = "Acc", "/Meas/Acc/10", 10
	acc.Channels = []edf.Channel{edf.SensorChannel("Acc", "Acc", "x")}
	gyro, _ := b.Stream("/Meas/Gyro/10")
	gyro.Name, gyro.Transducer, gyro.Rate = "Gyro", "/Meas/Gyro/10", 10
	gyro.Channels = []edf.Channel{edf.SensorChannel("Gyro", "Gyro", "x")}
	acc.Add(5000, []float64{1, 2, 3, 4}) // 4 samples from device time 5 s
	acc.Add(5700, []float64{8, 9})       // 5.4 s to 5.6 s never came
	gyro.Add(5100, []float64{7, 7, 7})
	b.AnnotateAt(5250, "tap")
	f, err := b.File()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range f.Signals {
		fmt.Println(s.Label, s.Unit, s.Samples)
	}
	for _, a := range f.Annotations {
		fmt.Println(a.Onset, a.Text)
	}
	// Output:
	// Acc x m/s2 [1 2 3 4 4 4 4 8 9]
	// Gyro x deg/s [7 7 7 7]
	// 400ms Acc: 3 samples lost
	// 250ms tap
}
