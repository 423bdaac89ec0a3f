package phone

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A device that went away is listed as gone, with why in its note, for
// GoneListed; requests for it fail with why meanwhile and after.
func TestGoneListedAWhile(t *testing.T) {
	ph, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ph.Close()
	now := time.Unix(1_700_000_000, 0)
	ph.now = func() time.Time { return now }
	for _, serial := range []string{"000123", "000124"} {
		d := &peer{ph: ph, serial: serial, p: Peripheral{Serial: serial}, streams: map[string]*stream{}}
		d.adv.Advertising = true
		ph.devs[serial] = d
	}
	ph.forget(ph.devs["000124"], "it is out of reach")
	list := func() (states []string) {
		for _, st := range ph.Devices() {
			states = append(states, st.Serial+" "+st.State+" "+st.Note)
			if st.State == "gone" && (st.Advertising || st.Connected) {
				t.Errorf("a device that went away: %+v", st)
			}
		}
		return states
	}
	if got, want := strings.Join(list(), "; "), "000123 advertising ; 000124 gone gone: it is out of reach"; got != want {
		t.Errorf("the list after 000124 went away: %q, want %q", got, want)
	}
	now = now.Add(GoneListed - time.Nanosecond)
	if got := list(); len(got) != 2 {
		t.Errorf("the list just before GoneListed passed: %q", got)
	}
	now = now.Add(time.Nanosecond)
	if got, want := strings.Join(list(), "; "), "000123 advertising "; got != want {
		t.Errorf("the list once GoneListed passed: %q, want %q", got, want)
	}
	if _, err := ph.Device("000124"); !errors.Is(err, ErrUnknownDevice) || !strings.Contains(err.Error(), "it went away (it is out of reach)") {
		t.Errorf("a request for the device that went away: %v", err)
	}
}
