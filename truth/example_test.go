package truth_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"senseboard/replay"
	"senseboard/sensor"
	"senseboard/truth"
	"senseboard/world"
)

// Export a minute of a wearer with premature ventricular beats as a WFDB
// record, and read its annotations back.
func Example() {
	sc, _ := world.ParseScenario([]byte("heart:\n  pvc: 10\n"))
	m := sensor.NewModel(world.New(1, sc, 0), 1)
	dir, _ := os.MkdirTemp("", "truth")
	defer os.RemoveAll(dir)
	if err := truth.WriteWFDB(dir, "wearer", m, truth.Span{From: 0, To: time.Minute, Rate: 250}); err != nil {
		fmt.Println(err)
		return
	}
	r, err := replay.Load(filepath.Join(dir, "wearer.hea"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(r.Beats) == len(m.Beats(0, time.Minute)), r.Series[replay.ECG].Rate)
	// Output: true 250
}
