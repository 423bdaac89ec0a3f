package radio_test

import (
	"testing"

	"senseboard/clock"
	"senseboard/profile"
	"senseboard/radio"
	"senseboard/resource"
)

// A central that takes with Take gets the notifications in the order they
// were sent; while it does not take, the connection refuses a
// flow-controlled notification once 256 wait, as the channel of
// Notifications did, and takes them again once the central took what
// waits. A wake-up tells of what waits.
func TestTakeOrderAndLimit(t *testing.T) {
	c := newAirtimeLink(t, profile.Airtime{}, 1, clock.NewVirtual())
	for round := range 3 {
		sent := 0
		for ; ; sent++ {
			ok, err := c.TryNotify(streamChar, []byte{byte(sent), byte(sent >> 8)})
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
		}
		if sent != 256 {
			t.Fatalf("round %d: the connection took %d notifications the central did not read; want 256", round, sent)
		}
		select {
		case <-c.Wake():
		default:
			t.Fatalf("round %d: no wake-up with 256 notifications waiting", round)
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
// and a wake-up tells of the end; a channel asked for after the end holds
// what waited, and is closed.
func TestTakeAfterTheEnd(t *testing.T) {
	c := newAirtimeLink(t, profile.Airtime{}, 1, clock.NewVirtual())
	for i := range 3 {
		if err := c.Notify(streamChar, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var got radio.Taken
	c.Take(&got)
	<-c.Wake()
	if err := c.Notify(streamChar, []byte{3}); err != nil {
		t.Fatal(err)
	}
	c.Disconnect()
	<-c.Wake()
	if err := c.Notify(streamChar, []byte{4}); err != nil {
		t.Fatal(err)
	}
	ch := c.Notifications()
	var after []byte
	for n := range ch {
		after = append(after, n.Data[0])
	}
	if len(after) != 1 || after[0] != 3 {
		t.Errorf("after the end the channel held %v; want [3]", after)
	}
	c.Take(&got)
	if len(got.Notes) != 0 {
		t.Errorf("took %d notifications the channel held", len(got.Notes))
	}
}

// A central that reads the channel of Notifications gets it with what
// waited before it asked, in order, and Take takes from it too.
func TestNotificationsChannelHoldsWhatWaited(t *testing.T) {
	c := newAirtimeLink(t, profile.Airtime{}, 1, clock.NewVirtual())
	for i := range 4 {
		if err := c.Notify(streamChar, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	ch := c.Notifications()
	if len(ch) != 4 || cap(ch) != 256 {
		t.Fatalf("the channel holds %d of %d; want 4 of 256", len(ch), cap(ch))
	}
	if n := <-ch; n.Data[0] != 0 {
		t.Fatalf("first read %d; want 0", n.Data[0])
	}
	var got radio.Taken
	c.Take(&got)
	if len(got.Notes) != 3 || got.Notes[0].Data[0] != 1 || got.Notes[2].Data[0] != 3 {
		t.Fatalf("took %d notifications (%v); want 1, 2, 3", len(got.Notes), got.Notes)
	}
}
