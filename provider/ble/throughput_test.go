package ble_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"senseboard"
	"senseboard/content"
	"senseboard/radio"
	"senseboard/resource"
	sbt "senseboard/senseboardtest"
)

// sampleStream is a stream subscribed over BLE as a client sees it.
type sampleStream struct {
	path       string
	per, batch int // bytes per sample in the binary form GSP sends, samples per notification; 0: no samples (heart rate)
	rate       float64
}

func ecgStream(rate float64) sampleStream {
	return sampleStream{fmt.Sprintf("/Meas/ECG/%v", rate), 4, 16, rate}
}

// imuStream is a stream of the IMU, whose notifications carry a sample
// per 13 Hz of rate, 8 at most.
func imuStream(sensor string, per int, rate float64) sampleStream {
	return sampleStream{fmt.Sprintf("/Meas/%s/%v", sensor, rate), per, min(8, int(rate/13)), rate}
}

func imu9Stream(rate float64) sampleStream { return imuStream("IMU9", 36, rate) }

var hrStream = sampleStream{path: "/Meas/HR"}

// received is what a client counts of one stream: notifications, the
// ones missing by the timestamps, and those that are not whole batches.
type received struct {
	n, missing, partial int
	last                uint32
}

// see takes one notification of s.
func (r *received) see(s sampleStream, v any) error {
	r.n++
	if s.per == 0 {
		return nil
	}
	b, err := content.Append(nil, v)
	if err != nil {
		return err
	}
	if len(b) != 4+s.batch*s.per {
		r.partial++
	}
	ts := binary.LittleEndian.Uint32(b)
	if r.n > 1 {
		r.missing += int(math.Round(float64(ts-r.last)/(1000*float64(s.batch)/s.rate))) - 1
	}
	r.last = ts
	return nil
}

// bleStreams connects a central that asks for interval (0: none) to a
// device of the default profile, subscribes the streams over the
// connection as the radio link's session does (so each notification takes
// the air as GSP sends it), and lets seconds of device time pass while a
// transport reads what arrives. It returns what arrived of each stream,
// the subscriptions and the connection.
func bleStreams(t *testing.T, interval uint16, streams []sampleStream, seconds int, also *resource.Client) ([]received, []*resource.Subscription, *radio.Conn) {
	t.Helper()
	d := sbt.New(t, senseboard.Config{})
	central := radio.NewCentral("AA:BB:CC:00:00:09", "phone")
	central.Interval = interval
	q := resource.NewQueue(1 << 14)
	c, err := d.Device.Radio.Connect(central, q)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Disconnect)
	index := map[*resource.Subscription]int{}
	subs := make([]*resource.Subscription, len(streams))
	for i, s := range streams {
		env, err := do(d, c, &resource.Request{Op: resource.Subscribe, Path: s.path})
		if err != nil || !env.Status.OK() && env.Status != resource.StatusNoContent {
			t.Fatalf("SUBSCRIBE %s over BLE: %v %v", s.path, env.Status, err)
		}
		for _, sub := range c.Client().Subscriptions() {
			if _, ok := index[sub]; !ok {
				index[sub], subs[i] = i, sub
			}
		}
		if also != nil { // the same topic, at the same device time
			if env, err := d.Device.Core.Do(&resource.Request{Op: resource.Subscribe, Path: s.path, Client: also}); err != nil || env.Status/100 != 2 {
				t.Fatalf("SUBSCRIBE %s: %v %v", s.path, env.Status, err)
			}
		}
	}
	got := make([]received, len(streams))
	var buf []resource.Event
	for range seconds * 20 {
		d.Advance(50 * time.Millisecond)
		buf = q.Drain(buf[:0])
		for _, e := range buf {
			if i, ok := index[e.Sub]; ok && e.Ended == 0 {
				if err := got[i].see(streams[i], e.Content); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return got, subs, c
}

// The family's apps stream several sensors at once: ECG with the IMU and
// heart rate, or the IMU's three sensors. Over BLE at the default profile
// every sample arrives, at the interval a phone gets (it asks for the
// shortest, 7.5 ms, and is granted the device's shortest, 30 ms) and, for
// what the slowest interval can carry, at that one (a central with no
// wish): the transmit queue holds what falls due together, and a missed
// event only delays it. So do the seven streams of the bridge's GSP test
// (TestGSPOverWebSocket).
func TestTypicalStreamsOverBLELoseNothing(t *testing.T) {
	t.Parallel()
	const seconds = 20
	for _, tt := range []struct {
		name     string
		interval uint16 // the central's wish, units of 1.25 ms
		streams  []sampleStream
	}{
		{"ECG 128 Hz, IMU9 104 Hz and heart rate, phone", 6, []sampleStream{ecgStream(128), imu9Stream(104), hrStream}},
		{"ECG 128 Hz, IMU9 104 Hz and heart rate, slowest interval", 0, []sampleStream{ecgStream(128), imu9Stream(104), hrStream}},
		{"ECG 256 Hz, IMU9 208 Hz and heart rate, phone", 6, []sampleStream{ecgStream(256), imu9Stream(208), hrStream}},
		{"ECG 256 Hz, IMU9 208 Hz and heart rate, slowest interval", 0, []sampleStream{ecgStream(256), imu9Stream(208), hrStream}},
		{"Acc, Gyro and Magn at 208 Hz, phone", 6, []sampleStream{
			imuStream("Acc", 12, 208), imuStream("Gyro", 12, 208), imuStream("Magn", 12, 208)}},
		{"seven streams, phone", 6, []sampleStream{
			ecgStream(125), {"/Meas/ECG/125/mV", 2, 16, 125}, imuStream("Acc", 12, 13), imuStream("Acc", 12, 104),
			imu9Stream(52), imu9Stream(208), hrStream}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, subs, _ := bleStreams(t, tt.interval, tt.streams, seconds, nil)
			for i, s := range tt.streams {
				r := got[i]
				// The first batch fills after its span; the last may
				// still wait for the air.
				want := 1
				if s.per > 0 {
					want = int(seconds*s.rate/float64(s.batch)) - 2
				}
				if d := subs[i].Dropped(); d != 0 || r.missing != 0 || r.partial != 0 || r.n < want {
					t.Errorf("%s: %d notifications, %d dropped, %d missing by the timestamps, %d not whole; want at least %d and none lost",
						s.path, r.n, d, r.missing, r.partial, want)
				}
			}
		})
	}
}

// More than the air carries still loses whole notifications at the
// default profile, and counts each on its subscription: what the streams
// produced (what a second client, not over BLE, received or dropped) is
// what arrived, what was dropped and what still waits for the air; the
// timestamps show no more missing than were dropped.
func TestOverloadOverBLELosesWholeNotificationsAndCountsThem(t *testing.T) {
	t.Parallel()
	streams := []sampleStream{ecgStream(512), imu9Stream(833), imuStream("Acc", 12, 1666)}
	ref := resource.NewQueue(1 << 16)
	local := resource.NewClient("reference", ref)
	defer local.Close()
	got, subs, c := bleStreams(t, 6, streams, 10, local)

	produced := map[*resource.Topic]int{} // what the reference got, or could not take (the ECG front end's limit holds there too)
	for _, e := range ref.Drain(nil) {
		if e.Ended == 0 {
			produced[e.Sub.Topic]++
		}
	}
	for _, s := range local.Subscriptions() {
		produced[s.Topic] += int(s.Dropped())
	}
	arrived, dropped, all := 0, 0, 0
	for i, s := range streams {
		r, d := got[i], int(subs[i].Dropped())
		if r.partial != 0 {
			t.Errorf("%s: %d notifications arrived in part", s.path, r.partial)
		}
		if r.missing > d {
			t.Errorf("%s: the timestamps show %d missing, %d dropped", s.path, r.missing, d)
		}
		arrived, dropped, all = arrived+r.n, dropped+d, all+produced[subs[i].Topic]
		t.Logf("%s: %d arrived, %d dropped", s.path, r.n, d)
	}
	if waiting := c.Waiting(); dropped == 0 || arrived+dropped+waiting != all {
		t.Errorf("%d notifications arrived, %d were dropped and %d wait for the air; want some dropped, %d in all", arrived, dropped, waiting, all)
	}
}

// A notification the air carried to a reader that has no room for it is
// lost, as over the air, and counted on its subscription: what the stream
// produced is what the reader holds, what was dropped and what still waits
// for the air.
func TestCarriedToAFullReaderIsCounted(t *testing.T) {
	t.Parallel()
	d := sbt.New(t, senseboard.Config{})
	q := resource.NewQueue(4) // a reader that has stopped reading
	c, err := d.Device.Radio.Connect(radio.NewCentral("AA:BB:CC:00:00:0B", "phone"), q)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect()
	ref := resource.NewQueue(1 << 12)
	local := resource.NewClient("reference", ref)
	defer local.Close()
	for _, cl := range []*resource.Client{c.Client(), local} {
		if env, err := d.Device.Core.Do(&resource.Request{Op: resource.Subscribe, Path: "/Meas/Acc/52", Client: cl}); err != nil || !env.Status.OK() {
			t.Fatalf("SUBSCRIBE: %v %v", env.Status, err)
		}
	}
	d.Advance(5 * time.Second) // 65 notifications, which the air carries
	sub := c.Client().Subscriptions()[0]
	produced := len(ref.Drain(nil))
	if held, dropped, waiting := q.Len(), int(sub.Dropped()), c.Waiting(); held != q.Cap() || held+dropped+waiting != produced {
		t.Errorf("the reader holds %d, %d were dropped, %d wait for the air; want it full and %d in all", held, dropped, waiting, produced)
	}
}

// Notifications that wait for the air when their subscription ends still
// take their airtime and are then discarded, not counted in Dropped: the
// subscriber sees no gap in what it asked for (docs/behaviour.md).
func TestUnsubscribeDiscardsWhatWaitsUncounted(t *testing.T) {
	t.Parallel()
	d := sbt.New(t, senseboard.Config{})
	q := resource.NewQueue(1 << 12)
	c, err := d.Device.Radio.Connect(radio.NewCentral("AA:BB:CC:00:00:0A", "phone"), q)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect()
	for _, path := range []string{"/Meas/Acc/1666", "/Meas/IMU9/833"} {
		if env, err := do(d, c, &resource.Request{Op: resource.Subscribe, Path: path}); err != nil || !env.Status.OK() {
			t.Fatalf("SUBSCRIBE %s: %v %v", path, env.Status, err)
		}
	}
	var acc *resource.Subscription
	for _, s := range c.Client().Subscriptions() {
		if strings.Contains(s.Topic.URI(), "Acc") {
			acc = s
		}
	}
	d.Advance(time.Second) // more than the air carries: the queue is full
	q.Drain(nil)
	if c.Waiting() == 0 {
		t.Fatal("nothing waits for the air")
	}
	if env, err := do(d, c, &resource.Request{Op: resource.Unsubscribe, Path: "/Meas/Acc/1666"}); err != nil || !env.Status.OK() {
		t.Fatalf("UNSUBSCRIBE: %v %v", env.Status, err)
	}
	dropped := acc.Dropped()
	for range 20 {
		d.Advance(50 * time.Millisecond)
		for _, e := range q.Drain(nil) {
			if e.Sub == acc && e.Ended == 0 {
				t.Fatalf("a notification of %s arrived after its end", acc.Topic.URI())
			}
		}
	}
	if acc.Dropped() != dropped {
		t.Errorf("Dropped %d after the end, %d before: want no more counted", acc.Dropped(), dropped)
	}

}
