package radio_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"senseboard/clock"
	"senseboard/content"
	"senseboard/profile"
	"senseboard/radio"
	"senseboard/resource"
)

// counted is recyclable content that counts its holds, releases and
// keeps (resource.Recyclable).
type counted struct{ holds, releases, keeps atomic.Int32 }

func (r *counted) Hold()    { r.holds.Add(1) }
func (r *counted) Release() { r.releases.Add(1) }
func (r *counted) Keep()    { r.keeps.Add(1) }

// keepingSink is a transport's sink that is no queue: it keeps what it
// takes.
type keepingSink struct{ got []any }

func (s *keepingSink) Notify(n resource.Notification) bool {
	s.got = append(s.got, n.Content)
	return true
}
func (s *keepingSink) Ended(*resource.Subscription, resource.EndReason) {}

// airtimeConn connects a central to a device under the throughput model
// whose subscriptions' notifications go on to sink, and subscribes to a
// topic over the connection.
func airtimeConn(t *testing.T, clk clock.Clock, sink resource.Sink, topics int) (*radio.Peripheral, *radio.Conn, []*resource.Subscription) {
	t.Helper()
	p := newPeripheral(t, radio.Config{
		Clock:            clk,
		Airtime:          profile.Airtime{Enabled: true, PacketsPerEvent: 4, DataLength: 251, TXQueue: 8, MissedEvents: 0.02},
		NotificationSize: func(any) int { return 68 },
	})
	c, err := p.Connect(radio.NewCentral("AA:BB:CC:00:00:01", ""), sink)
	if err != nil {
		t.Fatal(err)
	}
	hub := resource.NewHub(0)
	var subs []*resource.Subscription
	for i := range topics {
		sub, resp := hub.Subscribe(&resource.Request{Client: c.Client()}, fmt.Sprintf("/Meas/ECG/%d", i), nopSource{})
		if !resp.Status.OK() {
			t.Fatal(resp.Status)
		}
		subs = append(subs, sub)
	}
	return p, c, subs
}

// A subscription's recyclable notification is held while it waits for
// the air and its hold goes on with it to a transport's queue, whose
// consumer releases it; one the model or the queue refuses is released
// at once, one the link loses on the way or the connection's end leaves
// waiting too, and one handed to a sink that is no queue is kept for good.
func TestAirHoldsRecyclableForTheTransport(t *testing.T) {
	for _, tt := range []struct {
		name     string
		sink     func() resource.Sink
		drain    bool // the queue's consumer takes what arrives (none once the connection ended)
		lose     bool // the link is lost while notifications wait
		end      bool // the connection ends while notifications wait
		wantKept bool // what the sink took is kept
	}{
		{name: "queue", sink: func() resource.Sink { return resource.NewQueue(1 << 12) }, drain: true},
		{name: "full queue", sink: func() resource.Sink { return resource.NewQueue(1) }},
		{name: "link lost", sink: func() resource.Sink { return resource.NewQueue(1 << 12) }, drain: true, lose: true},
		{name: "connection ends", sink: func() resource.Sink { return resource.NewQueue(1 << 12) }, drain: true, end: true},
		{name: "no queue", sink: func() resource.Sink { return &keepingSink{} }, wantKept: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewVirtual()
			sink := tt.sink()
			p, c, subs := airtimeConn(t, clk, sink, 1)
			var sent []*counted
			taken := 0
			for i := range 400 {
				r := &counted{}
				sent = append(sent, r)
				r.Hold() // the maker's, as a provider's while it publishes
				subs[0].Notify(r)
				r.Release()
				if tt.lose && i == 300 {
					p.Drop(0, nil) // what waits for the air goes nowhere
					break
				}
				if tt.end && i == 300 {
					if c.Waiting() == 0 {
						t.Fatal("nothing waits for the air when the connection ends")
					}
					c.Disconnect() // what waits for the air goes nowhere
					break
				}
				clk.Advance(time.Millisecond) // faster than the air: some are refused
			}
			clk.Advance(time.Second)
			if q, ok := sink.(*resource.Queue); ok {
				if tt.drain {
					for _, e := range q.Drain(nil) { // the consumer, done with each
						e.Content.(resource.Recyclable).Release()
						taken++
					}
				}
				q.Close() // releases what waits in it
			}
			c.Disconnect()
			refused := subs[0].Dropped()
			if !tt.lose && !tt.end && tt.drain && (taken == 0 || refused == 0) {
				t.Fatalf("%d notifications taken, %d refused; want some of each", taken, refused)
			}
			kept := 0
			for i, r := range sent {
				holds, releases, keeps := r.holds.Load(), r.releases.Load(), r.keeps.Load()
				if keeps > 0 {
					kept++
					continue
				}
				if holds != releases {
					t.Errorf("notification %d: held %d times, released %d", i, holds, releases)
				}
			}
			if tt.wantKept {
				if got := len(sink.(*keepingSink).got); got == 0 || kept != got {
					t.Errorf("%d notifications kept, the sink took %d; want the same, not 0", kept, got)
				}
			} else if kept != 0 {
				t.Errorf("%d notifications kept; want none", kept)
			}
		})
	}
}

// Pooled notifications of several subscriptions arrive intact through
// the throughput model while the consumer reads and releases them on a
// goroutine of its own and the provider makes new ones from the pool: a
// notification reused before its last holder was done would show another
// one's samples (and, under the race detector, a race). On a real clock
// the connection events run on the clock's goroutine while notifications
// are admitted and the event timer armed again.
func TestPooledNotificationsIntactOverTheAir(t *testing.T) {
	t.Run("virtual clock", func(t *testing.T) {
		clk := clock.NewVirtual()
		pooledOverTheAir(t, clk, 2000, func() { clk.Advance(2 * time.Millisecond) }, func() { clk.Advance(time.Second) })
	})
	t.Run("real clock", func(t *testing.T) {
		// No bound on time: the rounds go as fast as they can (most are
		// refused), then the air carries out what waits.
		clk := clock.NewReal()
		t.Cleanup(clk.Close)
		pooledOverTheAir(t, clk, 300, func() { time.Sleep(100 * time.Microsecond) }, func() {})
	})
}

// pooledOverTheAir publishes rounds of pooled ECG notifications of six
// subscriptions over a connection on clk, calling step after each round
// and settle after the last, and checks what arrives.
func pooledOverTheAir(t *testing.T, clk clock.Clock, rounds int, step, settle func()) {
	const streams, n = 6, 16
	q := resource.NewQueue(1 << 12)
	ready := make(chan struct{}, 1)
	q.WakeWith(func() {
		select {
		case ready <- struct{}{}:
		default:
		}
	})
	_, c, subs := airtimeConn(t, clk, q, streams)
	stream := make(map[*resource.Subscription]int32, streams)
	for k, s := range subs {
		stream[s] = int32(k)
	}
	sample := func(k int32, ts uint32, j int) int32 { return k<<24 | int32(ts)<<5 | int32(j) }

	var wg sync.WaitGroup
	done := make(chan struct{})
	var checked, bad atomic.Int64
	wg.Go(func() { // the transport's consumer
		var events []resource.Event
		for {
			select {
			case <-ready:
			case <-done:
				return
			}
			events = q.Drain(events[:0])
			for _, e := range events {
				ecg := e.Content.(*content.ECGData)
				k := stream[e.Sub]
				for j, v := range ecg.Samples {
					if want := sample(k, ecg.Timestamp, j); v != want || len(ecg.Samples) != n {
						bad.Add(1)
						break
					}
				}
				checked.Add(1)
				ecg.Release()
			}
		}
	})
	for i := range rounds {
		for k, s := range subs {
			e := content.NewECGData(uint32(i), n)
			for j := range e.Samples {
				e.Samples[j] = sample(int32(k), uint32(i), j)
			}
			s.Notify(e)
			e.Release()
		}
		step()
	}
	settle()
	for q.Len() > 0 || c.Waiting() > 0 {
		time.Sleep(time.Millisecond)
	}
	close(done)
	wg.Wait()
	c.Disconnect()
	if checked.Load() == 0 || bad.Load() != 0 {
		t.Errorf("%d notifications arrived, %d of them with samples not their own; want some, none", checked.Load(), bad.Load())
	}
}
