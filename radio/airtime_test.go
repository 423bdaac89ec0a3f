package radio_test

import (
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
	st, err := radio.OpenSettings(openStore(tb))
	if err != nil {
		tb.Fatal(err)
	}
	p := radio.New(radio.Config{Address: "0C:8C:DC:00:01:23", Serial: "000123", Product: "Senseboard", Seed: seed, Clock: clk, Airtime: a}, st)
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
// the connection took, reading them off as the central does.
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
			<-c.Notifications()
		}
	}
	return took
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
			interval := radio.Interval(c.Params())
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
	if got := burst(t, c, 1000, 244); got != 1000 {
		t.Errorf("took %d of 1000", got)
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
	if n := len(c.Notifications()); n != 1 {
		t.Fatalf("a stream took %d places of 2; want all but the last", n)
	}
	<-c.Notifications()
	if burst(t, c, 2, 10) != 1 {
		t.Fatal("a flow-controlled sender did not get the last place")
	}
	var called atomic.Int32
	c.WhenRoom(func() { called.Add(1) })
	if called.Load() != 0 {
		t.Fatal("called back before room came")
	}
	clk.Advance(radio.Interval(c.Params()))
	if called.Load() != 1 {
		t.Fatalf("called back %d times after the next event", called.Load())
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

// fastClock is a clock that moves by a step at each reading, so that a
// benchmark runs connection events without timers.
type fastClock struct {
	step time.Duration
	now  atomic.Int64
}

func (f *fastClock) Now() time.Duration { return time.Duration(f.now.Add(int64(f.step))) }
func (f *fastClock) AfterFunc(time.Duration, func()) clock.Timer {
	panic("no timers in the benchmark")
}

// BenchmarkNotify measures a notification through the throughput model:
// the admission, the copy for the central, and its reading. The clock
// moves 15 ms a notification, so that most are admitted.
func BenchmarkNotify(b *testing.B) {
	c := newAirtimeLink(b, profile.Airtime{Enabled: true, PacketsPerEvent: 4, DataLength: 251, TXQueue: 8, MissedEvents: 0.02}, 1, &fastClock{step: 15 * time.Millisecond})
	data := make([]byte, 68) // an ECG notification of 16 samples
	b.ReportAllocs()
	sent := 0
	for b.Loop() {
		if c.Notify(streamChar, data) != nil {
			b.Fatal("refused")
		}
		select {
		case <-c.Notifications():
			sent++
		default:
		}
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
	p := radio.New(radio.Config{
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
	for sent < chunks {
		clk.Advance(radio.Interval(c.Params()))
	}
	fmt.Println("after", clk.Now(), "all", len(c.Notifications()))
	// Output:
	// at once: 2
	// after 150ms all 5
}

// BenchmarkSubscriptionNotify measures a notification of a subscription
// made over a connection: the sizing of its content, the admission and
// the transport's queue.
func BenchmarkSubscriptionNotify(b *testing.B) {
	st, err := radio.OpenSettings(openStore(b))
	if err != nil {
		b.Fatal(err)
	}
	p := radio.New(radio.Config{
		Address: "0C:8C:DC:00:01:23", Serial: "000123", Clock: &fastClock{step: 15 * time.Millisecond},
		Airtime:          profile.Airtime{Enabled: true, PacketsPerEvent: 4, DataLength: 251, TXQueue: 8, MissedEvents: 0.02},
		NotificationSize: func(content any) int { return 68 },
	}, st)
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
	st, err := radio.OpenSettings(openStore(t))
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewVirtual()
	p := radio.New(radio.Config{
		Address: "0C:8C:DC:00:01:23", Serial: "000123", Clock: clk,
		Airtime:          profile.Airtime{Enabled: true, PacketsPerEvent: 1, DataLength: 251, TXQueue: 8},
		NotificationSize: func(any) int { return 68 },
	}, st)
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
	clk.Advance(radio.Interval(c.Params())) // one packet leaves: the first ECG notification
	send(ecg, 2)
	if ecg.Dropped() != 4 {
		t.Errorf("after one event: %d ECG notifications dropped in all, want 4", ecg.Dropped())
	}
}
