package replay_test

import (
	"errors"
	"fmt"

	"senseboard/replay"
)

// A WFDB record of two ECG leads in one signal file (format 16, 200 units
// a millivolt) becomes a recording whose ECG has both leads; Plays says
// which of several recordings a source plays the ECG of, and
// DropSecondLead lets the second lead go when the heart rate will take
// the first alone: a source of the recording then refuses it two.
func ExampleWFDB() {
	header := []byte("r 2 250 4\nr.dat 16 200\nr.dat 16 200\n")
	// Four frames, each sample of each lead two bytes, little-endian.
	dat := []byte{200, 0, 100, 0, 144, 1, 200, 0, 200, 0, 100, 0, 0, 0, 0, 0}
	rec, err := replay.WFDB("r", header, dat, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ecg := rec.Series[replay.ECG]
	fmt.Println("leads:", len(ecg.Axes), "first lead, mV:", ecg.Axes[0])

	motionOnly := &replay.Recording{Name: "walk"}
	fmt.Println("the ECG plays from recording", replay.Plays(replay.ECG, []*replay.Recording{motionOnly, rec}))

	rec.DropSecondLead()
	fmt.Println("leads:", len(rec.Series[replay.ECG].Axes))
	err = replay.NewSource(0, nil, rec).SetHRLeads(2)
	fmt.Println("two leads for the heart rate refused:", errors.Is(err, replay.ErrSecondLeadDropped))
	// Output:
	// leads: 2 first lead, mV: [1 2 1 0]
	// the ECG plays from recording 1
	// leads: 1
	// two leads for the heart rate refused: true
}
