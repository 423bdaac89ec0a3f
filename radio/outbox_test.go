package radio_test

import (
	"fmt"
	"testing"
	"time"

	"senseboard/clock"
	"senseboard/profile"
	"senseboard/radio"
	"senseboard/resource"
)

// A central that takes with Take gets the notifications in the order they
// were sent; while it does not take, the connection refuses a
// flow-controlled notification once 256 wait, and takes them again once
// the central took what waits. A wake-up tells of what waits.
func TestTakeOrderAndLimit(t *testing.T) {
	c := newAirtimeLink(t, profile.Airtime{}, 1, clock.NewVirtual())
	woken := 0
	c.WakeWith(func() { woken++ })
	for round := range 3 {
		woken = 0
		sent := tryNumbered(t, c, 0)
		if sent != 256 {
			t.Fatalf("round %d: the connection took %d notifications the central did not read; want 256", round, sent)
		}
		if woken != sent {
			t.Fatalf("round %d: %d wake-ups for %d notifications handed out; want one each", round, woken, sent)
		}
		var got radio.Taken
		c.Take(&got)
		if len(got.Notes) != sent {
			t.Fatalf("round %d: took %d notifications; want %d", round, len(got.Notes), sent)
		}
		for i, n := range got.Notes {
			if v := int(n.Data[0]) | int(n.Data[1])<<8; v != i || n.Char != streamChar {
				t.Fatalf("round %d: notification %d is %d of %s; want %d of %s", round, i, v, n.Char, i, streamChar)
			}
		}
		c.Take(&got)
		if len(got.Notes) != 0 {
			t.Fatalf("round %d: took %d notifications again", round, len(got.Notes))
		}
	}
}

// tryNumbered sends notifications numbered from n with TryNotify until
// one is refused, and returns the number of the one refused.
func tryNumbered(tb testing.TB, c *radio.Conn, n int) int {
	tb.Helper()
	for ; ; n++ {
		ok, err := c.TryNotify(streamChar, []byte{byte(n), byte(n >> 8)})
		if err != nil {
			tb.Fatal(err)
		}
		if !ok {
			return n
		}
	}
}

// The heart-rate and serial services' queues hold 64 items each: what the
// device sends while 64 wait is lost, as over the air, and what the
// central takes comes in order.
func TestTakeServicesLimit(t *testing.T) {
	p := newPeripheral(t, radio.Config{HRS: true, NUS: true})
	c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), resource.NewQueue(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect()
	if err := c.SetHRSNotifications(true); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		c.SendHRS(radio.HRSData{Average: float32(i)})
		c.SendNUS([]byte{byte(i)})
	}
	var got radio.Taken
	c.Take(&got)
	if len(got.HRS) != 64 || len(got.NUS) != 64 {
		t.Fatalf("took %d measurements and %d serial packets; want 64 and 64", len(got.HRS), len(got.NUS))
	}
	for i := range 64 {
		if got.HRS[i].Average != float32(i) || got.NUS[i][0] != byte(i) {
			t.Fatalf("item %d: measurement %v, serial packet %v; want %d", i, got.HRS[i].Average, got.NUS[i], i)
		}
	}
}

// What the device sent before the connection ended is taken after it,
// and a wake-up tells of the end.
func TestTakeAfterTheEnd(t *testing.T) {
	c := newAirtimeLink(t, profile.Airtime{}, 1, clock.NewVirtual())
	for i := range 3 {
		if err := c.Notify(streamChar, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var got radio.Taken
	c.Take(&got)
	if err := c.Notify(streamChar, []byte{3}); err != nil {
		t.Fatal(err)
	}
	woken := 0
	c.WakeWith(func() { woken++ })
	if woken != 1 {
		t.Errorf("WakeWith with a notification waiting woke the reader %d times; want once", woken)
	}
	c.Disconnect()
	if woken != 2 {
		t.Errorf("the end woke the reader %d times; want once", woken-1)
	}
	if err := c.Notify(streamChar, []byte{4}); err != nil {
		t.Fatal(err)
	}
	c.Take(&got)
	if len(got.Notes) != 1 || got.Notes[0].Data[0] != 3 {
		t.Errorf("after the end took %v; want the notification 3 sent before it", got.Notes)
	}
}

// The reader is woken with none of the connection's locks held, on the
// goroutine that handed out, with the model on (by the connection event)
// and off (by the sender), for notifications of the services and of the
// subscriptions made over the connection: its wake function can take
// what waits, and ask the connection what it likes, at once.
func TestWakeWithTakesAtOnce(t *testing.T) {
	for _, a := range []profile.Airtime{{}, profile.DefaultAirtime} {
		clk := clock.NewVirtual()
		p := newPeripheral(t, radio.Config{HRS: true, NUS: true, Clock: clk, Airtime: a})
		q := resource.NewQueue(16)
		c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), q)
		if err != nil {
			t.Fatal(err)
		}
		var got radio.Taken
		var hrs []float32
		var events []resource.Event
		c.WakeWith(func() {
			c.Notifying(radio.HeartRateMeasurement) // takes the connection's lock
			c.Waiting()                             // and the model's
			c.Take(&got)
			for _, d := range got.HRS {
				hrs = append(hrs, d.Average)
			}
			events = q.Drain(events)
		})
		if err := c.SetHRSNotifications(true); err != nil {
			t.Fatal(err)
		}
		hub := resource.NewHub(0)
		sub, resp := hub.Subscribe(&resource.Request{Client: c.Client()}, "/Test", nopSource{})
		if !resp.Status.OK() {
			t.Fatal(resp)
		}
		for i := range 5 {
			c.SendHRS(radio.HRSData{Average: float32(i)})
			sub.Notify(i)
			clk.Advance(c.Interval())
		}
		clk.Advance(time.Second)
		hub.End(sub, resource.EndReset)
		c.Disconnect()
		if fmt.Sprint(hrs) != "[0 1 2 3 4]" {
			t.Errorf("enabled %v: the reader took the measurements %v; want [0 1 2 3 4]", a.Enabled, hrs)
		}
		var contents []any
		ended := 0
		for _, e := range events {
			if e.Ended != 0 {
				ended++
			} else {
				contents = append(contents, e.Content)
			}
		}
		if fmt.Sprint(contents) != "[0 1 2 3 4]" || ended != 1 {
			t.Errorf("enabled %v: the reader took the notifications %v and %d ends; want [0 1 2 3 4] and 1", a.Enabled, contents, ended)
		}
	}
}

// TryNotify's flow control counts what waits for the air with what waits
// for the central: a central that does not take is handed 256
// notifications in all, however many wait for the air on the way, and
// loses none of them.
func TestTryNotifyCountsWhatIsInTheAir(t *testing.T) {
	for _, tt := range []struct {
		name string
		a    profile.Airtime
	}{
		{"model off", profile.Airtime{}},
		{"a transmit queue of 8", profile.Airtime{Enabled: true, PacketsPerEvent: 2, DataLength: 251, TXQueue: 8}},
		{"a transmit queue of 64", profile.Airtime{Enabled: true, PacketsPerEvent: 4, DataLength: 251, TXQueue: 64}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewVirtual()
			c := newAirtimeLink(t, tt.a, 1, clk)
			sent := 0
			for range 200 { // connection events: far more than 256 notifications need
				sent = tryNumbered(t, c, sent)
				clk.Advance(c.Interval())
			}
			if sent != 256 || c.Untaken() != 256 || c.Waiting() != 0 {
				t.Fatalf("the connection took %d notifications; %d wait for the central and %d for the air; want 256, 256 and 0",
					sent, c.Untaken(), c.Waiting())
			}
			var got radio.Taken
			c.Take(&got)
			for i, n := range got.Notes {
				if v := int(n.Data[0]) | int(n.Data[1])<<8; v != i {
					t.Fatalf("notification %d is %d; want %d", i, v, i)
				}
			}
			if len(got.Notes) != sent {
				t.Fatalf("took %d notifications; want %d", len(got.Notes), sent)
			}
		})
	}
}

// Serial data that the central has TX notifications on for goes out as a
// notification of TX also when the serial service's queue is full, and is
// copied only while one of the two has room.
func TestSendNUSWithTXNotifications(t *testing.T) {
	p := newPeripheral(t, radio.Config{NUS: true})
	c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), resource.NewQueue(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect()
	if err := c.SetNotify(radio.NUSTX, true); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 20)
	for i := range 300 {
		before := c.SlabUsed()
		c.SendNUS(data)
		// Data is copied into the slab, or into a new one when it is full.
		copied := c.SlabUsed() != before
		if want := i < 256; copied != want { // past 256 both are full
			t.Fatalf("send %d: copied %v; want %v", i+1, copied, want)
		}
	}
	var got radio.Taken
	c.Take(&got)
	if len(got.NUS) != 64 || len(got.Notes) != 256 {
		t.Errorf("took %d serial packets and %d TX notifications; want 64 and 256", len(got.NUS), len(got.Notes))
	}
	for _, n := range got.Notes {
		if n.Char != radio.NUSTX {
			t.Fatalf("a notification of %s; want %s", n.Char, radio.NUSTX)
		}
	}
}
