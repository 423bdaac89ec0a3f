package logbook_test

import (
	"bytes"
	"testing"
	"time"

	"senseboard"
	"senseboard/app"
	"senseboard/logbook"
	"senseboard/resource"
	"senseboard/senseboardtest"
)

// makeLog logs IMU9 and ECG for a while and returns the log's id and bytes.
func makeLog(t *testing.T, d *senseboardtest.Rig, seconds int) (uint32, []byte) {
	t.Helper()
	d.Expect(200, resource.Put, "/Mem/DataLogger/Config", config(t, "/Meas/IMU9/52", "/Meas/ECG/200/mV", "/Time/Detailed"))
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
	for range seconds * 10 {
		d.Advance(100 * time.Millisecond)
	}
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateReady))
	es := entries(t, d)
	id := es[len(es)-1].ID
	return id, logBytes(t, d, id)
}

// assemble joins the notifications of a log read by subscription; it fails
// on a hole or an overlap, and reports how many end marks came.
type assembly struct {
	data []byte
	ends int
}

func (a *assembly) add(t *testing.T, content any) {
	t.Helper()
	n, ok := content.(*logbook.LogDataNotification)
	if !ok {
		t.Fatalf("notification %T, want *logbook.LogDataNotification", content)
	}
	if int(n.Offset) != len(a.data) {
		t.Fatalf("notification at offset %d after %d bytes", n.Offset, len(a.data))
	}
	if n.End() {
		a.ends++
		return
	}
	if a.ends > 0 {
		t.Fatalf("%d bytes after the end mark", len(n.Data))
	}
	if len(n.Data) > logbook.DataChunk || len(n.Ints) != len(n.Data) {
		t.Fatalf("notification of %d bytes (%d in its JSON form); at most %d", len(n.Data), len(n.Ints), logbook.DataChunk)
	}
	a.data = append(a.data, n.Data...)
}

// A subscription to a log's data delivers the whole log in order, paced by
// what the subscriber's queue takes, without a loss, then the end marks.
func TestLogDataBySubscription(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	id, want := makeLog(t, d, 10)
	if len(want) < 16*logbook.DataChunk {
		t.Fatalf("a log of %d bytes is too short to need pacing", len(want))
	}
	for _, tt := range []struct {
		name string
		sub  func(path string, params ...resource.Value) *senseboardtest.Sub
	}{
		{"queue", d.Subscribe},       // a transport's bounded queue: paced
		{"take-all", d.SubscribeAll}, // a sink that takes everything at once
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.sub("/Mem/Logbook/byId/{LogId}/Data", resource.Int32(int32(id)))
			if s.Env.Status != 200 {
				t.Fatalf("SUBSCRIBE: %v %s", s.Env.Status, s.Env.Error)
			}
			var a assembly
			for range 10000 {
				for _, c := range s.Contents() {
					a.add(t, c)
				}
				if a.ends == logbook.DataEnds {
					break
				}
				d.Advance(time.Millisecond)
			}
			if a.ends != logbook.DataEnds || !bytes.Equal(a.data, want) {
				t.Fatalf("%d of %d bytes, %d end marks; equal %v", len(a.data), len(want), a.ends, bytes.Equal(a.data, want))
			}
			for _, sub := range s.Client.Subscriptions() {
				if sub.Dropped() != 0 {
					t.Errorf("%d notifications dropped", sub.Dropped())
				}
			}
			d.Advance(time.Second)
			if more := s.Contents(); len(more) != 0 {
				t.Errorf("%d notifications after the end", len(more))
			}
		})
	}
}

// A transfer that its subscriber's queue has no room for goes on as soon
// as the queue's consumer has taken what waits, not on the device's clock:
// read without the clock moving, each drain of the queue takes a full
// window of the log (at most 16 notifications wait), and the drains after
// the first take the log to its end. On a clock that runs its calls in
// passes of a fleet's write interval (100 ms) a transfer paced by the
// clock took two windows a pass. Nor does it set a call of the clock to
// try again: a drain calls it back once, and a retry besides would offer
// beside it.
func TestLogDataResumesOnDrain(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	id, want := makeLog(t, d, 20)
	calls := d.Clock.Pending()
	s := d.Subscribe("/Mem/Logbook/byId/{LogId}/Data", resource.Int32(int32(id)))
	if s.Env.Status != 200 {
		t.Fatalf("SUBSCRIBE: %v %s", s.Env.Status, s.Env.Error)
	}
	const window = 16 // the notifications of a transfer that may wait at once
	notes := (len(want)+logbook.DataChunk-1)/logbook.DataChunk + logbook.DataEnds
	if notes < 4*window {
		t.Fatalf("a log of %d notifications is too short to need several windows", notes)
	}
	start := d.Clock.Now()
	var a assembly
	for drains := 1; a.ends < logbook.DataEnds; drains++ {
		if n := d.Clock.Pending(); n != calls {
			t.Fatalf("before drain %d, %d calls of the clock wait, %d before the subscription: the transfer retries on the clock", drains, n, calls)
		}
		got := s.Contents()
		if len(got) == 0 {
			t.Fatalf("drain %d took nothing: the transfer waits after %d of %d bytes", drains, len(a.data), len(want))
		}
		if n := min(window, notes-(drains-1)*window); len(got) != n {
			t.Fatalf("drain %d took %d notifications, want %d", drains, len(got), n)
		}
		for _, c := range got {
			a.add(t, c)
		}
	}
	if !bytes.Equal(a.data, want) || d.Clock.Now() != start {
		t.Fatalf("%d of %d bytes, equal %t; the clock moved %v", len(a.data), len(want), bytes.Equal(a.data, want), d.Clock.Now()-start)
	}
	for _, sub := range s.Client.Subscriptions() {
		if sub.Dropped() != 0 {
			t.Errorf("%d notifications dropped", sub.Dropped())
		}
	}
}

// Unsubscribing stops a transfer, and not another subscriber's; bad and
// missing ids are refused with
// what is allowed.
func TestLogDataSubscriptionErrors(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	id, data := makeLog(t, d, 10)
	for _, tt := range []struct {
		id     int32
		status resource.Status
	}{
		{0, 400},
		{-3, 400},
		{int32(id) + 1, 404},
	} {
		s := d.Subscribe("/Mem/Logbook/byId/{LogId}/Data", resource.Int32(tt.id))
		if s.Env.Status != tt.status || s.Env.Error == "" {
			t.Errorf("SUBSCRIBE log %d: %v %q, want %v with a reason", tt.id, s.Env.Status, s.Env.Error, tt.status)
		}
	}

	s := d.Subscribe("/Mem/Logbook/byId/{LogId}/Data", resource.Int32(int32(id)))
	other := d.Subscribe("/Mem/Logbook/byId/{LogId}/Data", resource.Int32(int32(id))) // reads on
	first := s.Contents()
	if len(first) == 0 {
		t.Fatal("no notification at subscription")
	}
	env, err := d.Device.Do(&resource.Request{Op: resource.Unsubscribe, Path: "/Mem/Logbook/byId/{LogId}/Data", Params: []resource.Value{resource.Int32(int32(id))}, Client: s.Client})
	if err != nil || env.Status != 200 {
		t.Fatalf("UNSUBSCRIBE: %v %v", env.Status, err)
	}
	for range 100 {
		d.Advance(time.Millisecond)
	}
	if more := s.Contents(); len(more) != 0 {
		t.Errorf("%d notifications after unsubscribing", len(more))
	}
	var a assembly
	for range 10000 {
		for _, c := range other.Contents() {
			a.add(t, c)
		}
		if a.ends == logbook.DataEnds {
			break
		}
		d.Advance(time.Millisecond)
	}
	if a.ends != logbook.DataEnds || !bytes.Equal(a.data, data) {
		t.Errorf("the other subscriber read %d of %d bytes and %d end marks", len(a.data), len(data), a.ends)
	}
}

// An in-device app reads a log by subscription through the app interface.
func TestLogDataThroughAnApp(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	id, want := makeLog(t, d, 5)
	got := make(chan []byte, 1)
	status := make(chan resource.Status, 1)
	rt, err := app.Run(d.Device.Core, appFunc(func(ctx *app.Context) error {
		var data []byte
		var sub *app.Subscription
		sub = ctx.Subscribe("/Mem/Logbook/byId/{LogId}/Data", func(content any) {
			n := content.(*logbook.LogDataNotification)
			if int(n.Offset) != len(data) {
				got <- nil
				return
			}
			if n.End() {
				if sub != nil {
					sub.Unsubscribe(nil)
					sub = nil
					got <- data
				}
				return
			}
			data = append(data, n.Data...)
		}, func(env resource.Envelope) { status <- env.Status }, resource.Int32(int32(id)))
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop()
	for range 100000 {
		select {
		case st := <-status:
			if st != 200 {
				t.Fatalf("SUBSCRIBE from the app: %v", st)
			}
			continue
		case data := <-got:
			if !bytes.Equal(data, want) {
				t.Fatalf("the app read %d bytes, want the log's %d", len(data), len(want))
			}
			return
		default:
		}
		d.Advance(time.Millisecond)
		time.Sleep(10 * time.Microsecond) // let the app's goroutine drain its queue
	}
	t.Fatal("the app did not read the whole log")
}

type appFunc func(ctx *app.Context) error

func (appFunc) Name() string                   { return "reader" }
func (f appFunc) Start(ctx *app.Context) error { return f(ctx) }

// One log can be erased, as the family's DELETE /Mem/Logbook/byId/{LogId};
// not the one being written.
func TestRemoveOneLog(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	first, _ := makeLog(t, d, 2)
	second, want := makeLog(t, d, 2)
	d.Expect(400, resource.Delete, "/Mem/Logbook/byId/{LogId}", resource.Int32(0))
	d.Expect(404, resource.Delete, "/Mem/Logbook/byId/{LogId}", resource.Int32(int32(second)+1))
	d.Expect(200, resource.Delete, "/Mem/Logbook/byId/{LogId}", resource.Int32(int32(first)))
	d.Expect(404, resource.Get, "/Mem/Logbook/byId/{LogId}/Data", resource.Int32(int32(first)))
	if es := entries(t, d); len(es) != 1 || es[0].ID != second || !bytes.Equal(logBytes(t, d, second), want) {
		t.Errorf("after erasing log %d: %+v", first, es)
	}
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
	open := entries(t, d)
	env := d.Expect(409, resource.Delete, "/Mem/Logbook/byId/{LogId}", resource.Int32(int32(open[len(open)-1].ID)))
	if env.Error == "" {
		t.Error("409 without a reason")
	}
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateReady))
	// kept across a restart
	d.Restart()
	if es := entries(t, d); len(es) != 2 || es[0].ID != second {
		t.Errorf("after a restart: %+v", es)
	}
}
