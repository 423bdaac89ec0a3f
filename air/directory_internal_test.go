package air

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestDirectoryGoodbyes: a device leaves the directory when the program
// that serves it says goodbye, with why, and not when another program
// says goodbye for the same serial number.
func TestDirectoryGoodbyes(t *testing.T) {
	l, _ := rawLink(t, Options{Interval: time.Hour})
	d, err := l.Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	advert := func(program, gone string) {
		b, _ := json.Marshal(Advert{Serial: "000555", Program: program, Every: 1000, Gone: gone})
		d.advert(&nats.Msg{Subject: AdvertSubject("000555"), Data: b})
	}
	for _, tt := range []struct {
		program, gone string
		present       bool
		why           string
	}{
		{"p1", "", true, ""},
		{"p2", "switched off", true, ""},
		{"p1", "switched off", false, "it went off the air: switched off"},
		{"p2", "switched off", false, "it went off the air: switched off"},
	} {
		advert(tt.program, tt.gone)
		d.mu.Lock()
		present, why := d.present["000555"] != nil, d.left["000555"]
		d.mu.Unlock()
		if present != tt.present || why != tt.why {
			t.Errorf("after %s's advert gone %q: present %v, why %q; want %v, %q", tt.program, tt.gone, present, why, tt.present, tt.why)
		}
	}
}

// TestDirectoryCloseUnsubscribes: a closed directory hears no more adverts.
func TestDirectoryCloseUnsubscribes(t *testing.T) {
	l, _ := rawLink(t, Options{Interval: time.Hour})
	before := l.nc.NumSubscriptions()
	d, err := l.Watch()
	if err != nil {
		t.Fatal(err)
	}
	if n := l.nc.NumSubscriptions(); n != before+1 {
		t.Fatalf("%d subscriptions with a directory, want %d", n, before+1)
	}
	d.Close()
	if n := l.nc.NumSubscriptions(); n != before {
		t.Errorf("%d subscriptions after the directory closed, want %d", n, before)
	}
}
