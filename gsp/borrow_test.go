package gsp_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"senseboard/api"
	"senseboard/app"
	"senseboard/clock"
	"senseboard/device"
	"senseboard/gsp"
	"senseboard/gsp/gspwire"
	"senseboard/internal/await"
	"senseboard/profile"
	"senseboard/resource"
)

// held is notification content that counts its holds, as a pooled
// notification does (resource.Recyclable), and tells of each release.
type held struct {
	mu       sync.Mutex
	holds    int
	kept     bool
	released chan struct{}
}

func (h *held) Hold() { h.mu.Lock(); h.holds++; h.mu.Unlock() }
func (h *held) Keep() { h.mu.Lock(); h.kept = true; h.mu.Unlock() }
func (h *held) Release() {
	h.mu.Lock()
	h.holds--
	h.mu.Unlock()
	h.released <- struct{}{}
}

func (h *held) count() (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.holds, h.kept
}

// announcer serves /Meas/Temp with a subscription that notifies its new
// subscriber at once, before the device answers the subscribe request:
// the notification reaches the GSP module before the answer it must
// follow. It waits until the module has handled it (the queue's hold
// released), notes the holds then, and lets go of its own.
type announcer struct {
	c      *held
	during chan int
}

func (a *announcer) Register(d *device.Core) error {
	ok := func(*resource.Request) resource.Response { return resource.OK(nil) }
	d.HandleFunc("/Meas/Temp", resource.Get, ok)
	d.HandleFunc("/Meas/Temp/Info", resource.Get, ok)
	d.HandleSource("/Meas/Temp", a)
	return nil
}

func (a *announcer) Subscribe(*resource.Topic, *resource.Request) resource.Response {
	return resource.OK(nil)
}

func (a *announcer) Unsubscribed(*resource.Topic) {}

func (a *announcer) Announce(sub *resource.Subscription) {
	a.c.Hold() // its maker's
	if !sub.Notify(a.c) {
		a.during <- -1
		return
	}
	select {
	case <-a.c.released: // the app's goroutine handled it
		n, _ := a.c.count()
		a.during <- n
	case <-time.After(await.Guard): // hang guard
		a.during <- -2
	}
	a.c.Release()
}

// A notification that reaches the module before the answer to its
// SUBSCRIBE waits for the answer; the module borrows its notifications
// (app.Subscription.Borrow), so it holds the one that waits until it has
// sent it, and then lets it go. On the real clock: on a virtual one the
// app's notifications are kept for good, and borrowing changes nothing.
func TestEarlyNotificationHeld(t *testing.T) {
	set, err := api.LoadFiles("meas_temp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := profile.Default()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	a := &announcer{c: &held{released: make(chan struct{}, 4)}, during: make(chan int, 1)}
	clk := clock.NewReal()
	t.Cleanup(clk.Close)
	d, err := device.New(device.Config{Profile: p, Clock: clk, Definitions: set, Providers: []device.Provider{a}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m := gsp.New()
	r, err := app.Run(d, m)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	notes := make(chan []byte, 16)
	conn := m.Connect(0, gsp.NotifyFunc(func(b []byte) { notes <- append([]byte(nil), b...) }))
	defer conn.Close()
	answer := func(ref uint8) []byte {
		t.Helper()
		for {
			n := await.Within(t, notes, fmt.Sprintf("no answer to the command of reference %d", ref))
			if n[0] == gspwire.CommandResponse && n[1] == ref {
				return n
			}
		}
	}

	conn.Write(gspwire.AppendCommand(nil, gspwire.Command{Code: gspwire.Subscribe, Ref: 1, Path: "/Meas/Temp"}))
	if n := answer(1); status(n) != 200 {
		t.Fatalf("SUBSCRIBE answered % x", n)
	}
	// The module handles commands in order: once HELLO is answered, the
	// notification that waited for the SUBSCRIBE's answer went out.
	conn.Write(gspwire.AppendCommand(nil, gspwire.Command{Code: gspwire.Hello, Ref: 2}))
	answer(2)
	switch during := await.Within(t, a.during, "the device has not announced the notification"); during {
	case -1:
		t.Fatal("the module's subscription did not take the notification")
	case -2:
		t.Fatal("the module never let go of the queue's hold: it does not borrow its notifications")
	case 2:
	default:
		t.Errorf("%d holds once the module handled a notification that waits for its answer; want 2, its maker's and the module's own", during)
	}
	if holds, kept := a.c.count(); holds != 0 || kept {
		t.Errorf("after it went out, the notification has %d holds, kept %v; want none, not kept", holds, kept)
	}
}
