package radio_test

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"senseboard/clock"
	"senseboard/nvm"
	"senseboard/profile"
	"senseboard/radio"
	"senseboard/resource"
)

var (
	streamService = radio.MustParseUUID("00000011-0000-4000-8000-000000000000")
	streamChar    = radio.MustParseUUID("00000012-0000-4000-8000-000000000000")
)

// newAirtimeLink connects a central to a device under the throughput model
// and switches on the notifications of a characteristic.
func newAirtimeLink(tb testing.TB, a profile.Airtime, seed uint64, clk clock.Clock) *radio.Conn {
	tb.Helper()
	p := newPeripheral(tb, radio.Config{Seed: seed, Clock: clk, Airtime: a})
	if err := p.AddService(&radio.Service{UUID: streamService, Characteristics: []radio.Characteristic{{UUID: streamChar, Props: radio.PropNotify}}}); err != nil {
		tb.Fatal(err)
	}
	c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), resource.NewQueue(1))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Disconnect)
	if err := c.SetNotify(streamChar, true); err != nil {
		tb.Fatal(err)
	}
	return c
}

// burst tries n notifications of size bytes at once and returns how many
// the connection took.
func burst(tb testing.TB, c *radio.Conn, n, size int) int {
	tb.Helper()
	took := 0
	data := make([]byte, size)
	for range n {
		ok, err := c.TryNotify(streamChar, data)
		if err != nil {
			tb.Fatal(err)
		}
		if ok {
			took++
		}
	}
	return took
}

// arrived takes the notifications that have arrived, as the central
// does, and returns their first bytes.
func arrived(c *radio.Conn) []byte {
	var got []byte
	for _, n := range took(c).Notes {
		got = append(got, n.Data[0])
	}
	return got
}

// took takes what the device sent the central, as the central does.
func took(c *radio.Conn) radio.Taken {
	var t radio.Taken
	c.Take(&t)
	return t
}

// A connection event carries PacketsPerEvent packets of DataLength bytes;
// what does not fit waits in the transmit queue, and what does not fit
// there is refused, whole.
func TestAirtimeBudget(t *testing.T) {
	for _, tt := range []struct {
		name     string
		a        profile.Airtime
		interval uint16 // 1.25 ms
		size     int
		first    int   // taken at once: the queue
		after    []int // taken after each further connection event
	}{
		{"one packet each", profile.Airtime{Enabled: true, PacketsPerEvent: 4, DataLength: 251, TXQueue: 8}, 40, 100, 8, []int{4, 4, 4}},
		{"full MTU", profile.Airtime{Enabled: true, PacketsPerEvent: 4, DataLength: 251, TXQueue: 8}, 40, 244, 8, []int{4, 4, 4}},
		{"four packets each without the data length extension", profile.Airtime{Enabled: true, PacketsPerEvent: 4, DataLength: 27, TXQueue: 8}, 40, 100, 8, []int{1, 1, 1}},
		{"two packets each", profile.Airtime{Enabled: true, PacketsPerEvent: 6, DataLength: 27, TXQueue: 3}, 6, 40, 3, []int{3, 3, 3}},
		{"a notification every second event", profile.Airtime{Enabled: true, PacketsPerEvent: 1, DataLength: 27, TXQueue: 2}, 24, 40, 2, []int{0, 1, 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewVirtual()
			c := newAirtimeLink(t, tt.a, 1, clk)
			if err := c.SetParams(radio.ConnParams{MinConnInterval: 6, MaxConnInterval: tt.interval, SupTimeout: 400}); err != nil {
				t.Fatal(err)
			}
			if got := burst(t, c, 100, tt.size); got != tt.first {
				t.Errorf("the first burst took %d, want %d", got, tt.first)
			}
			interval := c.Interval()
			for i, want := range tt.after {
				clk.Advance(interval)
				if got := burst(t, c, 100, tt.size); got != want {
					t.Errorf("after event %d: took %d, want %d", i+1, got, want)
				}
			}
		})
	}
}

// Without the model every notification leaves at once, up to what the
// central has not read.
func TestAirtimeOff(t *testing.T) {
	c := newAirtimeLink(t, profile.Airtime{}, 1, clock.NewVirtual())
	got := 0
	for range 1000 {
		got += burst(t, c, 1, 244)
		got -= 1 - len(arrived(c)) // it arrived at once
	}
	if got != 1000 {
		t.Errorf("took and delivered at once %d of 1000", got)
	}
	for i := 0; ; i++ {
		ok, err := c.TryNotify(streamChar, []byte{1})
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if i == 0 {
				t.Fatal("nothing taken")
			}
			break // the central stopped reading: no room
		}
	}
	if err := c.Notify(streamChar, []byte{2}); err != nil {
		t.Errorf("a lossy notification into a full connection: %v", err)
	}
}

// Which connection events are missed comes from the seed: the same seed
// loses the same notifications, another seed others.
func TestAirtimeSeeded(t *testing.T) {
	run := func(seed uint64) string {
		clk := clock.NewVirtual()
		c := newAirtimeLink(t, profile.Airtime{Enabled: true, PacketsPerEvent: 1, DataLength: 251, TXQueue: 2, MissedEvents: 0.3}, seed, clk)
		var got []byte
		for range 200 {
			clk.Advance(20 * time.Millisecond)
			got = append(got, byte('0'+burst(t, c, 1, 20)))
		}
		return string(got)
	}
	a, b, other := run(7), run(7), run(8)
	if a != b {
		t.Errorf("the same seed lost differently:\n%s\n%s", a, b)
	}
	if a == other {
		t.Error("seeds 7 and 8 lost the same notifications")
	}
	zeros := 0
	for _, ch := range a {
		if ch == '0' {
			zeros++
		}
	}
	if zeros == 0 || zeros == len(a) {
		t.Errorf("%d of %d notifications lost; want some", zeros, len(a))
	}
}

// Streams leave the last place of the transmit queue to flow-controlled
// senders, which are called back at the next connection event that
// carries packets, and when the connection ends.
func TestWhenRoom(t *testing.T) {
	clk := clock.NewVirtual()
	c := newAirtimeLink(t, profile.Airtime{Enabled: true, PacketsPerEvent: 1, DataLength: 251, TXQueue: 2}, 1, clk)
	for range 5 {
		if err := c.Notify(streamChar, make([]byte, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if burst(t, c, 2, 10) != 1 {
		t.Fatal("a flow-controlled sender did not get the last place")
	}
	var called atomic.Int32
	c.WhenRoom(func() { called.Add(1) })
	if called.Load() != 0 {
		t.Fatal("called back before room came")
	}
	clk.Advance(c.Interval())
	if called.Load() != 1 {
		t.Fatalf("called back %d times after the next event", called.Load())
	}
	if n := len(arrived(c)); n != 1 {
		t.Fatalf("%d notifications arrived in an event of one packet; the stream took one place of 2", n)
	}
	if burst(t, c, 1, 10) != 1 {
		t.Error("no room after the callback")
	}
	c.WhenRoom(func() { called.Add(1) })
	c.Disconnect()
	if called.Load() != 2 {
		t.Errorf("the end of the connection did not call back")
	}
	if _, err := c.TryNotify(streamChar, []byte{1}); err == nil {
		t.Error("TryNotify after the end did not fail")
	}
}

// BenchmarkNotify measures a notification through the throughput model:
// the admission, the copy for the central, the connection event that
// carries it and its reading. The clock moves 15 ms a notification, so
// that most are admitted.
func BenchmarkNotify(b *testing.B) {
	clk := clock.NewVirtual()
	c := newAirtimeLink(b, profile.Airtime{Enabled: true, PacketsPerEvent: 4, DataLength: 251, TXQueue: 8, MissedEvents: 0.02}, 1, clk)
	data := make([]byte, 68) // an ECG notification of 16 samples
	b.ReportAllocs()
	sent := 0
	var got radio.Taken
	for b.Loop() {
		clk.Advance(15 * time.Millisecond)
		if c.Notify(streamChar, data) != nil {
			b.Fatal("refused")
		}
		c.Take(&got)
		sent += len(got.Notes)
	}
	b.ReportMetric(float64(sent)/float64(b.N), "sent/op")
}

// A log transfer sends with TryNotify and goes on when WhenRoom calls it
// back, so that it loses nothing however slow the connection.
func ExampleConn_TryNotify() {
	dir, _ := os.MkdirTemp("", "radio-example")
	defer os.RemoveAll(dir)
	store, _ := nvm.Open(dir)
	defer store.Close()
	settings, _ := radio.OpenSettings(store)
	clk := clock.NewVirtual()
	p, _ := radio.New(radio.Config{
		Address: "0C:8C:DC:00:01:23", Serial: "000123", Clock: clk,
		Airtime: profile.Airtime{Enabled: true, PacketsPerEvent: 1, DataLength: 27, TXQueue: 2},
	}, settings)
	p.AddService(&radio.Service{UUID: streamService, Characteristics: []radio.Characteristic{{UUID: streamChar, Props: radio.PropNotify}}})
	c, _ := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", "phone"), resource.NewQueue(1))
	defer c.Disconnect()
	c.SetNotify(streamChar, true)

	chunks, sent := 5, 0
	var send func()
	send = func() {
		for sent < chunks {
			if ok, err := c.TryNotify(streamChar, []byte{byte(sent)}); err != nil || !ok {
				c.WhenRoom(send) // the next connection event that carries packets
				return
			}
			sent++
		}
	}
	send()
	fmt.Println("at once:", sent)
	var got radio.Taken
	for arrived := 0; arrived < chunks; arrived += len(got.Notes) {
		clk.Advance(c.Interval())
		c.Take(&got)
	}
	fmt.Println("all", chunks, "arrived after", clk.Now())
	// Output:
	// at once: 2
	// all 5 arrived after 250ms
}

// BenchmarkSubscriptionNotify measures a notification of a subscription
// made over a connection: the sizing of its content, the admission, the
// connection event that carries it and the transport's queue.
func BenchmarkSubscriptionNotify(b *testing.B) {
	clk := clock.NewVirtual()
	p := newPeripheral(b, radio.Config{
		Clock:            clk,
		Airtime:          profile.Airtime{Enabled: true, PacketsPerEvent: 4, DataLength: 251, TXQueue: 8, MissedEvents: 0.02},
		NotificationSize: func(content any) int { return 68 },
	})
	q := resource.NewQueue(1 << 16)
	c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), q)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Disconnect)
	hub := resource.NewHub(0)
	sub, resp := hub.Subscribe(&resource.Request{Client: c.Client()}, "/Meas/ECG/512", nopSource{})
	if !resp.Status.OK() {
		b.Fatal(resp.Status)
	}
	content := new(int)
	var events []resource.Event
	b.ReportAllocs()
	for b.Loop() {
		clk.Advance(15 * time.Millisecond)
		sub.Notify(content)
		events = q.Drain(events[:0])
	}
	b.ReportMetric(float64(sub.Dropped())/float64(b.N), "dropped/op")
}

type nopSource struct{}

func (nopSource) Subscribe(*resource.Topic, *resource.Request) resource.Response {
	return resource.OK(nil)
}
func (nopSource) Unsubscribed(*resource.Topic) {}

// limitSource sets its topics' Limit, as the ECG front end does with its
// buffer of two notifications.
type limitSource struct{ limit int }

func (s limitSource) Subscribe(t *resource.Topic, _ *resource.Request) resource.Response {
	t.Limit = s.limit
	return resource.OK(nil)
}
func (limitSource) Unsubscribed(*resource.Topic) {}

// A subscription whose source buffers Limit notifications of its own has
// at most that many waiting for the air; the rest of the queue stays free
// for the others. The transport's queue is drained at once, so only the
// radio's limit can refuse.
func TestAirtimeTopicLimit(t *testing.T) {
	clk := clock.NewVirtual()
	p := newPeripheral(t, radio.Config{
		Clock:            clk,
		Airtime:          profile.Airtime{Enabled: true, PacketsPerEvent: 1, DataLength: 251, TXQueue: 8},
		NotificationSize: func(any) int { return 68 },
	})
	q := resource.NewQueue(64)
	c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), q)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect()
	hub := resource.NewHub(0)
	subscribe := func(path string, limit int) *resource.Subscription {
		sub, resp := hub.Subscribe(&resource.Request{Client: c.Client()}, path, limitSource{limit})
		if !resp.Status.OK() {
			t.Fatal(resp.Status)
		}
		return sub
	}
	ecg, acc := subscribe("/Meas/ECG/512", 2), subscribe("/Meas/Acc/13", 0)
	send := func(sub *resource.Subscription, n int) {
		for range n {
			sub.Notify(new(int))
			q.Drain(nil)
		}
	}
	send(ecg, 5)
	send(acc, 4)
	if ecg.Dropped() != 3 || acc.Dropped() != 0 {
		t.Errorf("5 ECG and 4 Acc notifications at once: %d and %d dropped; want 3 (two wait in the front end's buffer) and 0",
			ecg.Dropped(), acc.Dropped())
	}
	clk.Advance(c.Interval()) // one packet leaves: the first ECG notification
	send(ecg, 2)
	if ecg.Dropped() != 4 {
		t.Errorf("after one event: %d ECG notifications dropped in all, want 4", ecg.Dropped())
	}
}

// A stream notification that goes out in several parts takes a place of
// the transmit queue for each, as GSP's DATA and DATA_PART2 are two
// notifications on the hardware: a queue whose streams have 7 places takes
// 7 notifications of one part, 3 of two parts, 2 of three.
func TestAirtimeStreamPartsTakePlaces(t *testing.T) {
	for _, tt := range []struct {
		name        string
		size, admit int
	}{
		{"one part", 100, 7},
		{"a full first part", 242, 7},
		{"two parts", 243, 3},
		{"three parts", 500, 2},
		{"no bytes", 0, 7},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewVirtual()
			p := newPeripheral(t, radio.Config{
				Clock:            clk,
				Airtime:          profile.Airtime{Enabled: true, PacketsPerEvent: 1, DataLength: 251, TXQueue: 8},
				NotificationSize: func(any) int { return tt.size },
			})
			c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), resource.NewQueue(64))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Disconnect()
			sub, resp := resource.NewHub(0).Subscribe(&resource.Request{Client: c.Client()}, "/Meas/IMU9/208", nopSource{})
			if !resp.Status.OK() {
				t.Fatal(resp.Status)
			}
			for range 10 {
				sub.Notify(new(int))
			}
			if got := c.Waiting(); got != tt.admit || int(sub.Dropped()) != 10-tt.admit {
				t.Errorf("10 notifications of %d bytes at the MTU of 247: %d wait, %d dropped; want %d waiting", tt.size, got, sub.Dropped(), tt.admit)
			}
		})
	}
}

// arrival is when a notification reached the central, on the device's
// clock, and which one it was.
type arrival struct {
	at time.Duration
	id byte
}

// watch advances the clock in steps of 1 ms up to end and notes when each
// notification arrives; send(t) is called at each step first.
func watch(t *testing.T, clk *clock.Virtual, c *radio.Conn, end time.Duration, send func(now time.Duration)) []arrival {
	t.Helper()
	var got []arrival
	for clk.Now() < end {
		clk.Advance(time.Millisecond)
		send(clk.Now())
		for _, id := range arrived(c) {
			got = append(got, arrival{clk.Now(), id})
		}
	}
	return got
}

// Notifications leave at the connection events, not when they are sent:
// a client sees them late by up to an interval, in the order sent, in
// groups of what each event carries.
func TestAirtimeEvents(t *testing.T) {
	clk := clock.NewVirtual()
	c := newAirtimeLink(t, profile.Airtime{Enabled: true, PacketsPerEvent: 2, DataLength: 251, TXQueue: 8}, 1, clk)
	interval := c.Interval() // 50 ms; events at 0, 50, 100, ...
	id := byte(0)
	got := watch(t, clk, c, 200*time.Millisecond, func(now time.Duration) {
		if now == 10*time.Millisecond || now == 20*time.Millisecond || now == 30*time.Millisecond || now == 120*time.Millisecond {
			id++
			if err := c.Notify(streamChar, []byte{id}); err != nil {
				t.Fatal(err)
			}
		}
	})
	// Two packets an event: 1 and 2 at 50 ms, 3 at 100 ms, 4 at 150 ms.
	want := []arrival{{50 * time.Millisecond, 1}, {50 * time.Millisecond, 2}, {100 * time.Millisecond, 3}, {150 * time.Millisecond, 4}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("arrivals %v, want %v (events every %v carrying two packets)", got, want, interval)
	}
}

// A missed connection event carries nothing: what waits leaves at the
// next one, later by an interval, and the same seed misses the same
// events.
func TestAirtimeMissedEventsDelay(t *testing.T) {
	run := func(seed uint64) []arrival {
		clk := clock.NewVirtual()
		c := newAirtimeLink(t, profile.Airtime{Enabled: true, PacketsPerEvent: 4, DataLength: 251, TXQueue: 8, MissedEvents: 0.3}, seed, clk)
		id := byte(0)
		return watch(t, clk, c, 2*time.Second, func(now time.Duration) {
			if now%(40*time.Millisecond) == 0 {
				id++
				c.Notify(streamChar, []byte{id})
			}
		})
	}
	a, b := run(3), run(3)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("the same seed gave other arrivals:\n%v\n%v", a, b)
	}
	interval := 50 * time.Millisecond
	late := 0
	for i, ar := range a {
		sent := time.Duration(ar.id) * 40 * time.Millisecond
		if ar.at%interval != 0 || ar.at <= sent {
			t.Fatalf("notification %d sent at %v arrived at %v, not at a later connection event", ar.id, sent, ar.at)
		}
		if ar.at-sent > interval {
			late++
		}
		if i > 0 && ar.id <= a[i-1].id {
			t.Fatalf("out of order: %v", a)
		}
	}
	if late == 0 || late == len(a) {
		t.Errorf("%d of %d notifications waited past a missed event; want some", late, len(a))
	}
}

// A write of the central comes in a connection event, which carries what
// waits at once; the following events count from it.
func TestAirtimeWriteCarries(t *testing.T) {
	clk := clock.NewVirtual()
	c := newAirtimeLink(t, profile.Airtime{Enabled: true, PacketsPerEvent: 4, DataLength: 251, TXQueue: 8}, 1, clk)
	got := watch(t, clk, c, 150*time.Millisecond, func(now time.Duration) {
		switch now {
		case 60 * time.Millisecond:
			c.Notify(streamChar, []byte{1})
		case 70 * time.Millisecond:
			if err := c.SetNotify(streamChar, true); err != nil { // a write of the descriptor
				t.Fatal(err)
			}
		case 80 * time.Millisecond:
			c.Notify(streamChar, []byte{2})
		}
	})
	want := []arrival{{70 * time.Millisecond, 1}, {120 * time.Millisecond, 2}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("arrivals %v, want %v", got, want)
	}
}

// The central chooses the connection interval within the device's
// parameters (30..50 ms by default), and the connection events come at
// the one granted: a faster central sees its notifications sooner.
func TestCentralChoosesInterval(t *testing.T) {
	for _, tt := range []struct {
		ask  uint16 // 1.25 ms
		want time.Duration
	}{
		{0, 50 * time.Millisecond}, {12, 30 * time.Millisecond}, {32, 40 * time.Millisecond}, {100, 50 * time.Millisecond},
	} {
		clk := clock.NewVirtual()
		p := newPeripheral(t, radio.Config{Clock: clk,
			Airtime: profile.Airtime{Enabled: true, PacketsPerEvent: 4, DataLength: 251, TXQueue: 8}})
		if err := p.AddService(&radio.Service{UUID: streamService, Characteristics: []radio.Characteristic{{UUID: streamChar, Props: radio.PropNotify}}}); err != nil {
			t.Fatal(err)
		}
		central := radio.NewCentral("AA:BB:CC:00:00:01", "")
		central.Interval = tt.ask
		c, err := p.Connect(central, resource.NewQueue(1))
		if err != nil {
			t.Fatal(err)
		}
		c.SetNotify(streamChar, true) // at 0: the events count from this write
		if got := c.Interval(); got != tt.want {
			t.Errorf("asked for %d: granted %v, want %v", tt.ask, got, tt.want)
		}
		got := watch(t, clk, c, 100*time.Millisecond, func(now time.Duration) {
			if now == time.Millisecond {
				c.Notify(streamChar, []byte{1})
			}
		})
		if len(got) != 1 || got[0].at != tt.want {
			t.Errorf("asked for %d: a notification sent at 1 ms arrived %v; want at the first event, %v", tt.ask, got, tt.want)
		}
		c.Disconnect()
	}
	p := newPeripheral(t, radio.Config{Clock: clock.NewVirtual()})
	central := radio.NewCentral("AA:BB:CC:00:00:01", "")
	central.Interval = 5
	if _, err := p.Connect(central, resource.NewQueue(1)); !errors.Is(err, radio.ErrInterval) {
		t.Errorf("an interval of 5 units: %v, want ErrInterval", err)
	}
}

// After the connection ends, neither an event timer that was already firing
// nor a notification admitted late arms the event timer again.
func TestAirtimeEndedArmsNothing(t *testing.T) {
	clk := clock.NewVirtual()
	c := newAirtimeLink(t, profile.Airtime{Enabled: true, PacketsPerEvent: 1, DataLength: 251, TXQueue: 16}, 1, clk)
	if got := burst(t, c, 8, 100); got != 8 { // half the queue: room left
		t.Fatalf("the burst took %d, want 8", got)
	}
	c.Disconnect()
	pending := clk.Pending()
	c.RunEvent()
	if got := clk.Pending(); got != pending {
		t.Errorf("an event after the end left %d timers pending, want %d", got, pending)
	}
	if c.AdmitContent(resource.Notification{}) {
		t.Error("a notification was admitted after the end")
	}
	if got := clk.Pending(); got != pending {
		t.Errorf("a late admission left %d timers pending, want %d", got, pending)
	}
}

// SendNUS copies the data only when it goes: not when the central does
// not read (model off) or the transmit queue is full (model on).
func TestSendNUSCopiesOnlyWhatGoes(t *testing.T) {
	for _, tt := range []struct {
		name string
		a    profile.Airtime
		goes int // sent before the rest is dropped
	}{
		{"model off: the NUS channel holds 64", profile.Airtime{}, 64},
		{"model on: the transmit queue of 3 keeps one place for flow-controlled senders", profile.Airtime{Enabled: true, PacketsPerEvent: 1, DataLength: 251, TXQueue: 3}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newAirtimeLink(t, tt.a, 1, clock.NewVirtual())
			data := make([]byte, 20)
			for i := range tt.goes + 5 {
				before := c.SlabUsed()
				c.SendNUS(data)
				want := 0
				if i < tt.goes {
					want = len(data)
				}
				if got := c.SlabUsed() - before; got != want {
					t.Fatalf("send %d copied %d bytes, want %d", i+1, got, want)
				}
			}
		})
	}
}

// A stream's notifications sent as notifications of a characteristic
// (NotifyStream, as the device's GSP service sends them) keep the same
// limit: at most Limit notifications of the subscription wait, however
// many parts each has, while the transmit queue has room for others.
func TestNotifyStreamTopicLimit(t *testing.T) {
	p := newPeripheral(t, radio.Config{
		Clock:   clock.NewVirtual(),
		Airtime: profile.Airtime{Enabled: true, PacketsPerEvent: 1, DataLength: 251, TXQueue: 20},
	})
	closed, switches, mtus := 0, []bool{}, []int{}
	err := p.AddService(&radio.Service{
		UUID:            echoService,
		Characteristics: []radio.Characteristic{{UUID: echoOut, Props: radio.PropNotify}},
		Open:            func(c *radio.Conn) radio.Handler { return echo{c, &closed, &switches, &mtus} },
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), resource.NewQueue(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect()
	if err := c.SetNotify(echoOut, true); err != nil {
		t.Fatal(err)
	}
	hub := resource.NewHub(0)
	ecg, resp := hub.Subscribe(&resource.Request{Client: c.Client()}, "/Meas/ECG/512", limitSource{2})
	if !resp.Status.OK() {
		t.Fatal(resp.Status)
	}
	var got []bool
	for range 3 {
		ok, err := c.NotifyStream(echoOut, ecg, []byte("DATA"), []byte("PART2"))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ok)
	}
	other, err := c.NotifyStream(echoOut, nil, []byte("other"))
	if fmt.Sprint(got) != "[true true false]" || !other || err != nil {
		t.Errorf("three ECG notifications of two parts: sent %v, then another stream's: %v %v; want [true true false] and true",
			got, other, err)
	}
}

func TestIntervalUnits(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want uint16
		err  error
	}{
		{0, 0, nil},
		{7500 * time.Microsecond, 6, nil},
		{30 * time.Millisecond, 24, nil},
		{4 * time.Second, 3200, nil},
		{5 * time.Millisecond, 0, radio.ErrInterval},
		{8 * time.Millisecond, 0, radio.ErrInterval},
		{4*time.Second + 1250*time.Microsecond, 0, radio.ErrInterval},
		{-time.Millisecond, 0, radio.ErrInterval},
	} {
		got, err := radio.IntervalUnits(tc.d)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("IntervalUnits(%v) = %d, %v; want %d, %v", tc.d, got, err, tc.want, tc.err)
		}
	}
}

// A stream payload goes out in parts of at most MTU-3 bytes, each behind a
// 2-byte header, and a notification of n bytes is n+7 bytes on the air,
// cut into packets of DataLength bytes.
func TestStreamPackets(t *testing.T) {
	for _, tc := range []struct {
		name       string
		dataLength int
		n, mtu     int
		want       int
	}{
		{"no bytes: a part of its header alone", 27, 0, 247, 1},          // 9 bytes
		{"one part", 27, 100, 247, 5},                                    // 109 bytes
		{"a full part", 27, 242, 247, 10},                                // 251 bytes
		{"a byte more: a second part", 27, 243, 247, 11},                 // 251 and 10 bytes
		{"three parts", 27, 500, 247, 21},                                // 251, 251 and 25 bytes
		{"full parts just over a packet", 27, 38, 24, 4},                 // 28 and 28 bytes
		{"the smallest MTU", 27, 40, 23, 3},                              // 27, 27 and 13 bytes
		{"a full part with the data length extension", 251, 242, 247, 1}, // 251 bytes
		{"two parts with the data length extension", 251, 243, 247, 2},   // 251 and 10 bytes
	} {
		a := profile.Airtime{DataLength: tc.dataLength}
		if got := radio.StreamPackets(&a, tc.n, tc.mtu); got != tc.want {
			t.Errorf("%s: StreamPackets(data length %d, %d bytes, MTU %d) = %d; want %d", tc.name, tc.dataLength, tc.n, tc.mtu, got, tc.want)
		}
	}
}

// The connection events run lazily, when something asks for room and when
// the event timer fires, armed for the first event that is not missed:
// what arrives, and when, is the same as when every event runs at its
// time.
func TestAirtimeLazyEventsAsEager(t *testing.T) {
	for _, missed := range []float64{0.2, 0.5} {
		run := func(eager bool) []arrival {
			clk := clock.NewVirtual()
			c := newAirtimeLink(t, profile.Airtime{Enabled: true, PacketsPerEvent: 1, DataLength: 251, TXQueue: 8, MissedEvents: missed}, 7, clk)
			id := byte(0)
			return watch(t, clk, c, 4*time.Second, func(now time.Duration) {
				if eager {
					c.RunEvent()
				}
				// half a second of notifications, then half a second idle
				if now%time.Second < 500*time.Millisecond && now%(70*time.Millisecond) == 0 {
					id++
					c.Notify(streamChar, []byte{id})
				}
			})
		}
		lazy, eager := run(false), run(true)
		if len(lazy) < 20 {
			t.Fatalf("missed %v: %d arrivals; want at least 20", missed, len(lazy))
		}
		if fmt.Sprint(lazy) != fmt.Sprint(eager) {
			t.Errorf("missed %v: the events run lazily carried\n%v\nand run at their times\n%v", missed, lazy, eager)
		}
	}
}

// A subscription's notification whose size the device does not know
// (Config.NotificationSize unset) takes a full MTU on the air: 244 bytes,
// 251 with the headers, 10 packets of 27 bytes or one of 251.
func TestAirtimeUnsizedNotificationTakesTheMTU(t *testing.T) {
	for _, tt := range []struct {
		dataLength, packetsPerEvent int
		left                        int // of 7, after one event
	}{
		{27, 10, 6},
		{27, 20, 5},
		{27, 32, 4},
		{251, 1, 6},
	} {
		clk := clock.NewVirtual()
		p := newPeripheral(t, radio.Config{
			Clock:   clk,
			Airtime: profile.Airtime{Enabled: true, PacketsPerEvent: tt.packetsPerEvent, DataLength: tt.dataLength, TXQueue: 8},
		})
		c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), resource.NewQueue(64))
		if err != nil {
			t.Fatal(err)
		}
		sub, resp := resource.NewHub(0).Subscribe(&resource.Request{Client: c.Client()}, "/Meas/Acc/13", nopSource{})
		if !resp.Status.OK() {
			t.Fatal(resp.Status)
		}
		for range 7 {
			sub.Notify(new(int))
		}
		clk.Advance(c.Interval())
		if got := c.Waiting(); got != tt.left {
			t.Errorf("%d packets of %d bytes an event: %d of 7 notifications wait after one event; want %d", tt.packetsPerEvent, tt.dataLength, got, tt.left)
		}
		c.Disconnect()
	}
}

// newHRSLink connects a central to a device with the heart-rate service
// under the throughput model, with the service's notifications on.
func newHRSLink(tb testing.TB, clk clock.Clock, seed uint64) (*radio.Peripheral, *radio.Conn) {
	tb.Helper()
	p := newPeripheral(tb, radio.Config{HRS: true, Clock: clk, Seed: seed,
		Airtime: profile.Airtime{Enabled: true, PacketsPerEvent: 4, DataLength: 251, TXQueue: 8}})
	c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), resource.NewQueue(1))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Disconnect)
	if err := c.SetHRSNotifications(true); err != nil {
		tb.Fatal(err)
	}
	return p, c
}

// Interference makes a share of the connection events carry nothing while
// it lasts: what waits then leaves later than the next event, and after
// it ends, at the next event again.
func TestInterferenceMissesEvents(t *testing.T) {
	clk := clock.NewVirtual()
	p, c := newHRSLink(t, clk, 5)
	if err := p.SetInterference(0.5, false); err != nil {
		t.Fatal(err)
	}
	interval := c.Interval()
	sent := map[float32]time.Duration{}
	late := map[bool]int{} // by whether the interference lasted
	var got radio.Taken
	for clk.Now() < 2*time.Second {
		clk.Advance(time.Millisecond)
		now := clk.Now()
		if now == time.Second {
			p.EndInterference()
		}
		if now%(40*time.Millisecond) == 0 {
			id := float32(now / time.Millisecond)
			sent[id] = now
			c.SendHRS(radio.HRSData{Average: id})
		}
		c.Take(&got)
		for _, d := range got.HRS {
			at := sent[d.Average]
			if now-at > interval {
				late[at < time.Second]++
			}
		}
	}
	if late[true] == 0 || late[false] != 0 {
		t.Errorf("%d measurements were late while the interference lasted, %d after it; want some and none", late[true], late[false])
	}
}

// Interference that empties every event holds what waits until it ends;
// then it leaves at the next event, with nothing more sent.
func TestInterferenceEndReleases(t *testing.T) {
	clk := clock.NewVirtual()
	p, c := newHRSLink(t, clk, 1)
	if err := p.SetInterference(1, false); err != nil {
		t.Fatal(err)
	}
	c.SendHRS(radio.HRSData{Average: 60})
	var got radio.Taken
	var at time.Duration
	for clk.Now() < 2*time.Second && at == 0 {
		clk.Advance(time.Millisecond)
		if clk.Now() == time.Second {
			p.EndInterference()
		}
		if c.Take(&got); len(got.HRS) > 0 {
			at = clk.Now()
		}
	}
	if want := time.Second + c.Interval(); at < time.Second || at > want {
		t.Errorf("the measurement arrived at %v; want after the interference ended at 1s, by %v", at, want)
	}
}

// lagClock is a virtual clock whose process was held up until resumed: it
// reads at least resumed, while the calls that fell due meanwhile run late,
// one after the other, as a real clock's do when its process resumes. Due
// tells when the call under way fell due (clock.Lagging), and AfterFunc
// counts from the reading, as a real clock's does.
type lagClock struct {
	*clock.Virtual
	resumed time.Duration
}

func (c *lagClock) Now() time.Duration { return max(c.Virtual.Now(), c.resumed) }
func (c *lagClock) Due() time.Duration { return c.Virtual.Now() }
func (c *lagClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return c.Virtual.AfterFunc(c.Now()+d-c.Virtual.Now(), f)
}

// The throughput model takes a notification, and runs a connection event,
// at the time it fell due: after the process was held up, a stream's
// notifications that fell due meanwhile run at once, late, and are
// modelled as if they had run in time, with the events between them. So
// the ECG front end's buffer of two notifications loses none of them, as
// on a clock that was never held up; taken at the clock's reading, all
// would reach the transmit queue at one instant and all past two be lost.
func TestAirtimeAdmitsWhenDue(t *testing.T) {
	for _, held := range []bool{false, true} {
		clk := &lagClock{Virtual: clock.NewVirtual()}
		p := newPeripheral(t, radio.Config{
			Clock:            clk,
			Airtime:          profile.Airtime{Enabled: true, PacketsPerEvent: 4, DataLength: 251, TXQueue: 8},
			NotificationSize: func(any) int { return 68 },
		})
		q := resource.NewQueue(4096)
		c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), q)
		if err != nil {
			t.Fatal(err)
		}
		sub, resp := resource.NewHub(0).Subscribe(&resource.Request{Client: c.Client()}, "/Meas/ECG/125", limitSource{2})
		if !resp.Status.OK() {
			t.Fatal(resp.Status)
		}
		// A notification every 30 ms, against an event every 50 ms: two
		// wait at most.
		const every = 30 * time.Millisecond
		sent, next := 0, time.Duration(0)
		var batch *clock.Call
		batch = clock.NewCall(clk, func() {
			q.Drain(nil) // the transport takes what the air carried
			sub.Notify(new(int))
			sent++
			next += every
			batch.At(next)
		})
		batch.At(next)
		clk.AdvanceTo(200 * time.Millisecond)
		if held {
			clk.resumed = 900 * time.Millisecond
		}
		clk.AdvanceTo(time.Second)
		batch.Stop()
		c.Disconnect()
		if sub.Dropped() != 0 || sent < 30 {
			t.Errorf("held up %t: %d of %d notifications lost; want none", held, sub.Dropped(), sent)
		}
	}
}
