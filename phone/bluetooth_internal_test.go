package phone

import (
	"testing"
	"time"

	"senseboard/internal/await"
)

// When the phone's Bluetooth comes on again, the note of each device it
// knows says so.
func TestBluetoothOnAgainNote(t *testing.T) {
	ph, _ := scriptedPhone(t, script{}, true) // manual: no connection comes to change the note
	on := make(chan struct{})
	if err := ph.BluetoothOff(time.Millisecond, func() { close(on) }); err != nil {
		t.Fatal(err)
	}
	await.Within(t, on, "the phone's Bluetooth did not come on again")
	st, err := ph.Device("000777")
	if want := "Bluetooth is on again"; err != nil || st.Note != want {
		t.Errorf("the device's note %q (%v); want %q", st.Note, err, want)
	}
}
