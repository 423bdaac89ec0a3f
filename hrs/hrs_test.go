package hrs_test

import (
	"fmt"
	"testing"
	"time"

	"senseboard"
	"senseboard/content"
	"senseboard/profile"
	"senseboard/radio"
	"senseboard/resource"
	"senseboard/senseboardtest"
)

// rig is a device of the profile's modules with a central connected.
func rig(t *testing.T, m profile.Modules) (*senseboardtest.Rig, *radio.Conn) {
	t.Helper()
	p := profile.Default()
	p.Modules = m
	d := senseboardtest.New(t, senseboard.Config{Profile: p})
	conn, err := d.Device.Radio.Connect(radio.NewCentral("AA:BB:CC:00:00:01", "Phone 1"), resource.NewQueue(64))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Disconnect)
	return d, conn
}

// run lets the device run for dt, a second at a time, and returns the
// Heart Rate Measurements the central got meanwhile (none once it went).
func run(d *senseboardtest.Rig, conn *radio.Conn, dt time.Duration) []radio.HRSData {
	var got []radio.HRSData
	for range int(dt / time.Second) {
		d.Advance(time.Second)
		var took radio.Taken
		conn.Take(&took)
		got = append(got, took.HRS...)
	}
	return got
}

// hrSubscribers is how many subscribers /Meas/HR has.
func hrSubscribers(t *testing.T, d *senseboardtest.Rig) int {
	t.Helper()
	topic, err := d.Device.TopicOf("/Meas/HR")
	if err != nil {
		t.Fatal(err)
	}
	if topic == nil { // never subscribed to
		return 0
	}
	return topic.Subscribers()
}

// TestFeed: with the feed, the heart-rate service notifies each of
// /Meas/HR's notifications, average and RR intervals, while the central
// has its notifications on, and /Meas/HR runs for it only then.
func TestFeed(t *testing.T) {
	d, conn := rig(t, profile.Modules{HRS: true, HRSFeed: true})
	hr := d.Subscribe("/Meas/HR") // what the device measures, to compare
	if got := run(d, conn, 5*time.Second); len(got) != 0 || hrSubscribers(t, d) != 1 {
		t.Fatalf("notifications off: the central got %v; /Meas/HR has %d subscribers, want the test's alone", got, hrSubscribers(t, d))
	}
	hr.Contents()

	if err := conn.SetHRSNotifications(true); err != nil {
		t.Fatal(err)
	}
	got := run(d, conn, 10*time.Second)
	var want []radio.HRSData
	for _, c := range hr.Contents() {
		h := c.(*content.HRData)
		want = append(want, radio.HRSData{Average: h.Average, RRData: h.RRData})
	}
	if len(got) < 8 || fmt.Sprint(got) != fmt.Sprint(want) || hrSubscribers(t, d) != 2 {
		t.Errorf("in 10 s the central got %d measurements %v;\n/Meas/HR notified %v; %d subscribers", len(got), got, want, hrSubscribers(t, d))
	}
	for _, m := range got {
		if m.Average < 40 || m.Average > 200 || len(m.RRData) != 1 || m.RRData[0] < 300 || m.RRData[0] > 1500 {
			t.Errorf("measurement %+v: not a resting wearer's", m)
		}
	}

	if err := conn.SetHRSNotifications(false); err != nil {
		t.Fatal(err)
	}
	if got := run(d, conn, 5*time.Second); len(got) != 0 || hrSubscribers(t, d) != 1 {
		t.Errorf("notifications off again: the central got %v; /Meas/HR has %d subscribers, want the test's alone", got, hrSubscribers(t, d))
	}

	// a central that goes with notifications on ends the measurement too
	if err := conn.SetHRSNotifications(true); err != nil {
		t.Fatal(err)
	}
	if got := run(d, conn, 5*time.Second); len(got) == 0 {
		t.Error("notifications on again: nothing")
	}
	conn.Disconnect()
	run(d, conn, time.Second)
	if n := hrSubscribers(t, d); n != 1 {
		t.Errorf("after the central went: /Meas/HR has %d subscribers, want the test's alone", n)
	}
}

// TestNoFeedWithoutTheSetting: a profile with the service and without the
// feed (a custom firmware whose app feeds it itself) notifies only what is
// posted, as before; a profile without the service has neither, and one
// that asks for the feed without the service is refused.
func TestNoFeedWithoutTheSetting(t *testing.T) {
	d, conn := rig(t, profile.Modules{HRS: true})
	if err := conn.SetHRSNotifications(true); err != nil {
		t.Fatal(err)
	}
	if got := run(d, conn, 10*time.Second); len(got) != 0 || hrSubscribers(t, d) != 0 {
		t.Errorf("the central got %v; /Meas/HR has %d subscribers", got, hrSubscribers(t, d))
	}
	plain := senseboardtest.New(t, senseboard.Config{})
	plain.Expect(404, resource.Post, "/Comm/Ble/HRS", senseboardtest.Record(t, "HRSData", `{"average": 60}`))
	p := profile.Default()
	p.Modules.HRSFeed = true
	if _, err := senseboard.New(senseboard.Config{Profile: p, StateDir: t.TempDir()}); err == nil {
		t.Error("a device with the feed and without the service")
	}
}

// TestFeedAcrossReset: the feed runs again after a reset, when a central
// connects anew.
func TestFeedAcrossReset(t *testing.T) {
	d, conn := rig(t, profile.Modules{HRS: true, HRSFeed: true})
	if err := conn.SetHRSNotifications(true); err != nil {
		t.Fatal(err)
	}
	run(d, conn, 3*time.Second)
	d.Device.Reset()
	if n := hrSubscribers(t, d); n != 0 {
		t.Errorf("after a reset /Meas/HR has %d subscribers", n)
	}
	d.Advance(time.Second)
	again, err := d.Device.Radio.Connect(radio.NewCentral("AA:BB:CC:00:00:02", "Phone 2"), resource.NewQueue(64))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(again.Disconnect)
	if err := again.SetHRSNotifications(true); err != nil {
		t.Fatal(err)
	}
	if got := run(d, again, 10*time.Second); len(got) < 5 {
		t.Errorf("after a reset the central got %v in 10 s", got)
	}
}
