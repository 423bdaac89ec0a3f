package resource

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recordingSource is a Source that records its calls and can refuse.
type recordingSource struct {
	mu       sync.Mutex
	refuse   Response
	subs     []string
	unsubs   []int // subscribers remaining at each Unsubscribed
	announce any
}

func (s *recordingSource) Subscribe(t *Topic, req *Request) Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs = append(s.subs, t.URI())
	if s.refuse.Status != 0 {
		return s.refuse
	}
	return OK(nil)
}

func (s *recordingSource) Unsubscribed(t *Topic) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unsubs = append(s.unsubs, t.Subscribers())
}

func (s *recordingSource) Announce(sub *Subscription) {
	if s.announce != nil {
		sub.Notify(s.announce)
	}
}

func subscribe(_ testing.TB, h *Hub, c *Client, uri string, src Source) (*Subscription, Response) {
	return h.Subscribe(&Request{Op: Subscribe, Client: c}, uri, src)
}

func TestSubscribeFanOutAndUnsubscribe(t *testing.T) {
	h := NewHub(0)
	src := &recordingSource{}
	qa, qb := NewQueue(8), NewQueue(8)
	a, b := NewClient("a", qa), NewClient("b", qb)
	sa, ra := subscribe(t, h, a, "/X", src)
	sb, rb := subscribe(t, h, b, "/X", src)
	if !ra.Status.OK() || !rb.Status.OK() {
		t.Fatalf("subscribe: %v %v", ra, rb)
	}
	topic := h.Topic("/X")
	if topic == nil || topic.Subscribers() != 2 || h.Count() != 2 {
		t.Fatalf("topic %v, count %d", topic, h.Count())
	}
	if n := topic.Publish("one"); n != 2 {
		t.Fatalf("Publish delivered to %d, want 2", n)
	}
	if _, r := subscribe(t, h, a, "/X", src); r.Status != StatusConflict {
		t.Errorf("second subscribe by the same client = %d, want 409", r.Status)
	}
	if r := h.Unsubscribe(&Request{Client: a}, "/X"); r.Status != StatusOK {
		t.Fatalf("unsubscribe: %v", r)
	}
	if sa.Active() || !sb.Active() {
		t.Errorf("active after unsubscribe: a %v b %v", sa.Active(), sb.Active())
	}
	if r := h.Unsubscribe(&Request{Client: a}, "/X"); r.Status != StatusNotFound {
		t.Errorf("second unsubscribe = %d, want 404", r.Status)
	}
	topic.Publish("two")
	ea, eb := qa.Drain(nil), qb.Drain(nil)
	if len(ea) != 0 {
		t.Errorf("a got %v after unsubscribing; its earlier notification belongs to an ended subscription and is skipped", ea)
	}
	if len(eb) != 2 || eb[0].Content != "one" || eb[1].Content != "two" || eb[0].Sub != sb {
		t.Errorf("b got %+v", eb)
	}
	b.Close()
	if h.Count() != 0 || h.Topic("/X") != nil {
		t.Errorf("after Close: count %d, topic %v", h.Count(), h.Topic("/X"))
	}
	if fmt.Sprint(src.unsubs) != "[1 0]" {
		t.Errorf("Unsubscribed saw remaining %v, want [1 0]", src.unsubs)
	}
	if _, r := subscribe(t, h, b, "/X", src); r.Status != StatusServiceUnavailable {
		t.Errorf("subscribe on closed client = %d, want 503", r.Status)
	}
}

func TestSubscribeRefusedAndLimit(t *testing.T) {
	h := NewHub(2)
	src := &recordingSource{refuse: Errorf(StatusConflict, "other rate active")}
	c := NewClient("c", NewQueue(4))
	if s, r := subscribe(t, h, c, "/ECG/250", src); s != nil || r.Status != StatusConflict || r.Err != "other rate active" {
		t.Fatalf("refused subscribe = %v, %+v", s, r)
	}
	if h.Count() != 0 || h.Topic("/ECG/250") != nil {
		t.Fatal("a refused subscription left state behind")
	}
	ok := &recordingSource{}
	subscribe(t, h, c, "/A", ok)
	subscribe(t, h, c, "/B", ok)
	if _, r := subscribe(t, h, c, "/C", ok); r.Status != StatusInsufficientStorage {
		t.Fatalf("third subscription over a limit of 2 = %d, want 507", r.Status)
	}
	if _, r := h.Subscribe(&Request{}, "/D", ok); r.Status != StatusBadRequest {
		t.Fatalf("subscription without client = %d, want 400", r.Status)
	}
	c.Close()
}

func TestAnnounceReachesOnlyTheNewSubscriber(t *testing.T) {
	h := NewHub(0)
	src := &recordingSource{announce: "hello"}
	qa, qb := NewQueue(4), NewQueue(4)
	a, b := NewClient("a", qa), NewClient("b", qb)
	subscribe(t, h, a, "/T", src)
	qa.Drain(nil)
	subscribe(t, h, b, "/T", src)
	if e := qa.Drain(nil); len(e) != 0 {
		t.Errorf("existing subscriber got %v", e)
	}
	if e := qb.Drain(nil); len(e) != 1 || e[0].Content != "hello" {
		t.Errorf("new subscriber got %v", e)
	}
	a.Close()
	b.Close()
}

func TestEndAllTellsSinks(t *testing.T) {
	h := NewHub(0)
	src := &recordingSource{}
	q := NewQueue(4)
	c := NewClient("c", q)
	s1, _ := subscribe(t, h, c, "/A", src)
	s2, _ := subscribe(t, h, c, "/B", src)
	h.EndAll(EndReset)
	ev := q.Drain(nil)
	if len(ev) != 2 {
		t.Fatalf("events %+v, want two ends", ev)
	}
	for _, e := range ev {
		if e.Ended != EndReset || (e.Sub != s1 && e.Sub != s2) {
			t.Errorf("event %+v", e)
		}
	}
	if len(c.Subscriptions()) != 0 || h.Count() != 0 {
		t.Errorf("subscriptions left: %d, count %d", len(c.Subscriptions()), h.Count())
	}
	// The client may subscribe again after a reset.
	if _, r := subscribe(t, h, c, "/A", src); !r.Status.OK() {
		t.Errorf("subscribe after EndAll = %v", r)
	}
	c.Close()
}

func TestQueueDropsNewestWhenFull(t *testing.T) {
	h := NewHub(0)
	q := NewQueue(3)
	c := NewClient("slow", q)
	s, _ := subscribe(t, h, c, "/S", &recordingSource{})
	fast := NewQueue(100)
	f := NewClient("fast", fast)
	subscribe(t, h, f, "/S", &recordingSource{})
	topic := h.Topic("/S")
	for i := range 10 {
		topic.Publish(i)
	}
	if s.Dropped() != 7 {
		t.Errorf("dropped %d, want 7", s.Dropped())
	}
	ev := q.Drain(nil)
	if len(ev) != 3 || ev[0].Content != 0 || ev[2].Content != 2 {
		t.Errorf("slow client got %+v, want the first three", ev)
	}
	if got := len(fast.Drain(nil)); got != 10 {
		t.Errorf("fast client got %d, want all 10", got)
	}
	// After a drain the queue fills from its start again.
	for i := range 5 {
		topic.Publish(10 + i)
	}
	ev = q.Drain(nil)
	if len(ev) != 3 || ev[0].Content != 10 {
		t.Errorf("after wrap got %+v", ev)
	}
	c.Close()
	f.Close()
}

func TestConcurrentPublishSubscribe(t *testing.T) {
	h := NewHub(0)
	src := &recordingSource{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // publisher
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				if t := h.Topic("/P"); t != nil {
					t.Publish(1)
				}
			}
		}
	}()
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := NewQueue(16)
			for range 200 {
				c := NewClient(fmt.Sprint(i), q)
				subscribe(t, h, c, "/P", src)
				q.Drain(nil)
				c.Close()
			}
		}()
	}
	close(stop)
	wg.Wait()
	if h.Count() != 0 {
		t.Errorf("count %d after all clients closed", h.Count())
	}
}

func benchmarkFanOut(b *testing.B, subscribers int) {
	h := NewHub(0)
	src := &recordingSource{}
	type consumer struct {
		q    *Queue
		done chan struct{}
	}
	var consumers []consumer
	var wg sync.WaitGroup
	for i := range subscribers {
		q := NewQueue(4096)
		ready := wakeable(q)
		c := NewClient(fmt.Sprint(i), q)
		subscribe(nil, h, c, "/Meas/Acc/104", src)
		cons := consumer{q, make(chan struct{})}
		consumers = append(consumers, cons)
		wg.Add(1)
		go func() { // drains like a transport's writer goroutine
			defer wg.Done()
			var buf []Event
			for {
				select {
				case <-cons.done:
					return
				case <-ready:
					buf = q.Drain(buf[:0])
				}
			}
		}()
	}
	topic := h.Topic("/Meas/Acc/104")
	content := "sample"
	b.ReportAllocs()
	b.ResetTimer()
	delivered := 0
	for b.Loop() {
		delivered += topic.Publish(content)
	}
	b.StopTimer()
	// Only notifications a queue took count: a full queue's drops do not.
	b.ReportMetric(float64(delivered)/b.Elapsed().Seconds(), "deliveries/s")
	b.ReportMetric(100*(1-float64(delivered)/(float64(b.N)*float64(subscribers))), "%dropped")
	for _, c := range consumers {
		close(c.done)
	}
	wg.Wait()
}

// BenchmarkFanOut publishes one notification to 1, 10 and 1000 subscribers,
// each a client with its own queue drained by its own goroutine.
func BenchmarkFanOut(b *testing.B) {
	for _, n := range []int{1, 10, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchmarkFanOut(b, n) })
	}
}

func TestTopicLimitCapsWaitingNotifications(t *testing.T) {
	h := NewHub(0)
	q := NewQueue(100)
	c := NewClient("c", q)
	src := &limitSource{limit: 2}
	s, _ := subscribe(t, h, c, "/ECG/512", src)
	topic := h.Topic("/ECG/512")
	for i := range 5 {
		topic.Publish(i)
	}
	if s.Dropped() != 3 || q.Len() != 2 {
		t.Fatalf("dropped %d, waiting %d; want 3 and 2", s.Dropped(), q.Len())
	}
	q.Drain(nil)
	topic.Publish(5)
	if ev := q.Drain(nil); len(ev) != 1 || ev[0].Content != 5 {
		t.Errorf("after draining: %+v", ev)
	}
	c.Close()
}

// A client's own wait (SetWait) takes the place of the topic's Limit for
// its subscriptions made after it: more, fewer, or back to the topic's.
func TestClientWaitReplacesTopicLimit(t *testing.T) {
	for _, tt := range []struct {
		wait, waiting int
	}{
		{0, 2},  // the topic's Limit
		{4, 4},  // the client's, larger
		{1, 1},  // the client's, smaller
		{-1, 2}, // back to the topic's
	} {
		h := NewHub(0)
		q := NewQueue(100)
		c := NewClient("c", q)
		c.SetWait(tt.wait)
		s, _ := subscribe(t, h, c, "/ECG/512", &limitSource{limit: 2})
		for i := range 5 {
			h.Topic("/ECG/512").Publish(i)
		}
		if q.Len() != tt.waiting || s.Dropped() != uint64(5-tt.waiting) {
			t.Errorf("wait %d: %d waiting, %d dropped; want %d and %d", tt.wait, q.Len(), s.Dropped(), tt.waiting, 5-tt.waiting)
		}
		c.Close()
	}
}

// A queued notification carries its subscription's drops before it, not
// those after it while it waited.
func TestEventCarriesDropsBefore(t *testing.T) {
	h := NewHub(0)
	q := NewQueue(100)
	c := NewClient("c", q)
	subscribe(t, h, c, "/ECG/512", &limitSource{limit: 2})
	topic := h.Topic("/ECG/512")
	for i := range 5 { // 0 and 1 wait, 2, 3 and 4 are dropped
		topic.Publish(i)
	}
	first := q.Drain(nil)
	topic.Publish(5)
	var got []uint32
	for _, e := range append(first, q.Drain(nil)...) {
		got = append(got, e.Dropped)
	}
	if want := []uint32{0, 0, 3}; !slices.Equal(got, want) {
		t.Errorf("drops before each notification %v, want %v", got, want)
	}
	c.Close()
}

// An Event is four words on a 64-bit machine, as it was before it carried
// its drop count: a queue's buffer holds as many in as many bytes.
func TestEventSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the size is pinned for 64-bit machines")
	}
	if got := unsafe.Sizeof(Event{}); got != 32 {
		t.Errorf("an Event is %d bytes, want 32", got)
	}
}

// What Queue.Notify reads of a subscription for each notification (its
// stall, queue, limit, pending count and drops) lies in its first 40
// bytes, within one cache line when the object starts on one.
func TestSubscriptionNotifyFieldsTogether(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the layout is pinned for 64-bit machines")
	}
	var s Subscription
	for name, end := range map[string]uintptr{
		"stall":   unsafe.Offsetof(s.stall) + unsafe.Sizeof(s.stall),
		"queue":   unsafe.Offsetof(s.queue) + unsafe.Sizeof(s.queue),
		"limit":   unsafe.Offsetof(s.limit) + unsafe.Sizeof(s.limit),
		"pending": unsafe.Offsetof(s.pending) + unsafe.Sizeof(s.pending),
		"dropped": unsafe.Offsetof(s.dropped) + unsafe.Sizeof(s.dropped),
	} {
		if end > 40 {
			t.Errorf("a subscription's %s ends at byte %d, past the first 40", name, end)
		}
	}
}

type limitSource struct {
	recordingSource
	limit int
}

func (s *limitSource) Subscribe(t *Topic, req *Request) Response {
	t.Limit = s.limit
	return OK(nil)
}

// TestQueueGrowsWithUse: a queue holds no buffer until notifications wait,
// grows as they do, keeps its capacity and order, and lets the buffer go
// when a drain finds it mostly empty.
func TestQueueGrowsWithUse(t *testing.T) {
	h := NewHub(0)
	q := NewQueue(1000)
	c := NewClient("c", q)
	s, _ := subscribe(t, h, c, "/S", &recordingSource{})
	if cap(q.buf) != 0 {
		t.Fatalf("a new queue of capacity 1000 holds a buffer of %d", cap(q.buf))
	}
	topic := h.Topic("/S")
	for i := range 100 {
		topic.Publish(i)
	}
	if n := len(q.buf); n < 100 || n > 200 {
		t.Errorf("100 waiting notifications in a buffer of %d", n)
	}
	for i := range 1000 {
		topic.Publish(100 + i)
	}
	if q.Len() != 1000 || s.Dropped() != 100 || len(q.buf) != 1000 {
		t.Errorf("%d waiting, %d dropped, buffer %d; want 1000, 100, 1000", q.Len(), s.Dropped(), len(q.buf))
	}
	ev := q.Drain(nil)
	for i, e := range ev {
		if e.Content != i {
			t.Fatalf("event %d is %v", i, e.Content)
		}
	}
	topic.Publish(1)
	q.Drain(ev[:0])
	if cap(q.buf) != 0 {
		t.Errorf("after a drain of one notification the queue holds a buffer of %d", cap(q.buf))
	}
	c.Close()
}

// A queue with DeferWake hands the wake-up of its consumer to its function,
// once per drain, and wakes the consumer at once for an end.
func TestQueueDeferWake(t *testing.T) {
	h := NewHub(0)
	q := NewQueue(8)
	ready := wakeable(q)
	var deferred []func()
	q.DeferWake(func(wake func()) { deferred = append(deferred, wake) })
	c := NewClient("c", q)
	s, _ := subscribe(t, h, c, "/S", &recordingSource{})
	woken := func() bool { return woken(ready) }
	h.Topic("/S").Publish(1)
	h.Topic("/S").Publish(2)
	if woken() || len(deferred) != 1 {
		t.Fatalf("after two notifications: woken %v, %d wake-ups deferred; want not woken, 1 deferred", woken(), len(deferred))
	}
	deferred[0]()
	if !woken() {
		t.Fatal("the deferred wake-up did not wake the consumer")
	}
	if ev := q.Drain(nil); len(ev) != 2 {
		t.Fatalf("drained %d events, want 2", len(ev))
	}
	h.Topic("/S").Limit = 2
	s.limit = 2
	h.Topic("/S").Publish(3)
	if woken() {
		t.Fatal("a notification below the topic's limit woke the consumer at once")
	}
	h.Topic("/S").Publish(4)
	if !woken() {
		t.Fatal("a notification that fills the topic's limit did not wake the consumer at once")
	}
	q.Drain(nil)
	deferred = deferred[:1]
	h.End(s, EndSource)
	if !woken() || len(deferred) != 1 {
		t.Errorf("an end: woken %v, %d wake-ups deferred; want woken at once, none deferred", woken(), len(deferred)-1)
	}
	c.Close()
}

// wakeable makes q wake its consumer on the channel it returns, which
// holds one wake-up.
func wakeable(q *Queue) <-chan struct{} {
	ready := make(chan struct{}, 1)
	q.WakeWith(func() {
		select {
		case ready <- struct{}{}:
		default:
		}
	})
	return ready
}

// woken reports whether the consumer of a queue that wakes it on ready
// (wakeable) was woken, and takes the wake-up.
func woken(ready <-chan struct{}) bool {
	select {
	case <-ready:
		return true
	default:
		return false
	}
}

// TestQueueWakesAndKeepsItsBuffer: the first notification to wait wakes the
// consumer, the next ones do not; an end wakes it, and a notification that
// then waits behind the end does not again. A drain lets the buffer go when
// it finds it less than a quarter full and larger than the smallest buffer,
// which a trickle of notifications keeps.
func TestQueueWakesAndKeepsItsBuffer(t *testing.T) {
	h := NewHub(0)
	q := NewQueue(1000)
	ready := wakeable(q)
	c := NewClient("c", q)
	defer c.Close()
	subscribe(t, h, c, "/S", &recordingSource{})
	ending, _ := subscribe(t, h, c, "/T", &recordingSource{})
	topic := h.Topic("/S")
	for _, step := range []struct {
		what  string
		do    func()
		woken bool
	}{
		{"the first notification", func() { topic.Publish(1) }, true},
		{"a second notification", func() { topic.Publish(2) }, false},
		{"an end", func() { q.Drain(nil); h.End(ending, EndSource) }, true},
		{"a notification behind a waiting end", func() { topic.Publish(3) }, false},
	} {
		step.do()
		if w := woken(ready); w != step.woken {
			t.Fatalf("%s: woken %v, want %v", step.what, w, step.woken)
		}
	}
	q.Drain(nil)

	for _, tt := range []struct {
		burst, left int // notifications waiting at the two drains
		kept        bool
	}{
		{minQueueBuffer, 1, true},                         // the smallest buffer is kept
		{2 * minQueueBuffer, minQueueBuffer / 2, true},    // a quarter full
		{2 * minQueueBuffer, minQueueBuffer/2 - 1, false}, // less than a quarter full
		{minQueueBuffer + 1, 1, false},                    // larger than the smallest, nearly empty
	} {
		for i := range tt.burst {
			topic.Publish(i)
		}
		q.Drain(nil)
		size := len(q.buf)
		for i := range tt.left {
			topic.Publish(i)
		}
		q.Drain(nil)
		if kept := q.buf != nil; kept != tt.kept || size < tt.burst {
			t.Errorf("a buffer of %d after %d, then %d waiting: kept %v, want %v", size, tt.burst, tt.left, kept, tt.kept)
		}
		q.release()
	}
}

// TestQueueLetsLargeEndBuffersGo: a drain that lets the notifications'
// buffer go lets the ends' buffer go too when it is larger than the
// smallest buffer, and keeps it otherwise.
func TestQueueLetsLargeEndBuffersGo(t *testing.T) {
	for _, tt := range []struct {
		ends int
		kept bool
	}{{2, true}, {minQueueBuffer, true}, {minQueueBuffer + 1, false}} {
		h := NewHub(0)
		q := NewQueue(1000)
		c := NewClient("c", q)
		subscribe(t, h, c, "/S", &recordingSource{})
		var subs []*Subscription
		for i := range tt.ends {
			s, _ := subscribe(t, h, c, fmt.Sprintf("/E%d", i), &recordingSource{})
			subs = append(subs, s)
		}
		for i := range 2 * minQueueBuffer {
			h.Topic("/S").Publish(i)
		}
		q.Drain(nil)
		for _, s := range subs {
			h.End(s, EndSource)
		}
		h.Topic("/S").Publish(0)
		if ev := q.Drain(nil); len(ev) != 1+tt.ends || q.buf != nil {
			t.Errorf("%d ends: drained %d events, buffer %d; want %d events, the buffer let go", tt.ends, len(ev), len(q.buf), 1+tt.ends)
		}
		if kept := q.ends != nil; kept != tt.kept {
			t.Errorf("%d ends: the ends' buffer (room for %d) kept %v, want %v", tt.ends, cap(q.ends), kept, tt.kept)
		}
		c.Close()
	}
}

// TestStall: a stall holds the subscriptions its match accepts, which get
// nothing while they stay registered; recovered runs once, when the last of
// them has ended, and at once for a stall that holds none; End resumes those
// left without it.
func TestStall(t *testing.T) {
	h := NewHub(0)
	src := &recordingSource{}
	qa, qb := NewQueue(8), NewQueue(8)
	a, b := NewClient("a", qa), NewClient("b", qb)
	sa, _ := subscribe(t, h, a, "/Meas/ECG/125", src)
	sb, _ := subscribe(t, h, b, "/Meas/ECG/125", src)
	sc, _ := subscribe(t, h, a, "/Meas/Acc/52", src)
	recovered := 0
	st := h.Stall(func(uri string) bool { return strings.HasPrefix(uri, "/Meas/ECG") }, func() { recovered++ })
	if st.Len() != 2 || !sa.Stalled() || !sb.Stalled() || sc.Stalled() {
		t.Fatalf("the stall holds %d; stalled a %t b %t acc %t", st.Len(), sa.Stalled(), sb.Stalled(), sc.Stalled())
	}
	taken, later := sa.Offer("ecg", func() { t.Error("a stalled stream's room called") })
	if n := h.Topic("/Meas/ECG/125").Publish("ecg"); n != 0 || sa.Notify("ecg") || taken || later {
		t.Errorf("a stalled stream got notifications (Publish reached %d; offered: taken %t, room later %t)", n, taken, later)
	}
	if n := h.Topic("/Meas/Acc/52").Publish("acc"); n != 1 {
		t.Errorf("a stream the stall does not hold reached %d, want 1", n)
	}
	if h.Unsubscribe(&Request{Client: a}, "/Meas/ECG/125"); recovered != 0 || st.Len() != 1 {
		t.Errorf("one of two ended: recovered %d times, the stall holds %d", recovered, st.Len())
	}
	sa2, _ := subscribe(t, h, a, "/Meas/ECG/125", src) // subscribed again: not stalled
	if sa2.Stalled() {
		t.Error("a new subscription is stalled")
	}
	if h.Unsubscribe(&Request{Client: b}, "/Meas/ECG/125"); recovered != 1 || st.Len() != 0 {
		t.Errorf("the last ended: recovered %d times, want 1; the stall holds %d", recovered, st.Len())
	}
	b.Close()
	if recovered != 1 {
		t.Errorf("recovered ran %d times", recovered)
	}

	none := 0
	h.Stall(func(string) bool { return false }, func() { none++ })
	if none != 1 {
		t.Errorf("a stall of nothing recovered %d times, want 1 at once", none)
	}

	ended := 0
	st = h.Stall(func(uri string) bool { return uri == "/Meas/Acc/52" }, func() { ended++ })
	st.End()
	if sc.Stalled() || ended != 0 || st.Len() != 0 {
		t.Errorf("after End: stalled %t, recovered %d times, holds %d", sc.Stalled(), ended, st.Len())
	}
	a.Close()
	qa.Drain(nil)
	qb.Drain(nil)
}

// recyclable is content that counts its holders (Recyclable).
type recyclable struct {
	holds, releases, keeps int
}

func (r *recyclable) Hold()    { r.holds++ }
func (r *recyclable) Release() { r.releases++ }
func (r *recyclable) Keep()    { r.keeps++ }

// sliceSink is a sink that is no Queue: it keeps what it takes.
type sliceSink struct{ got []any }

func (s *sliceSink) Notify(n Notification) bool     { s.got = append(s.got, n.Content); return true }
func (s *sliceSink) Ended(*Subscription, EndReason) {}

// holdingSink is a HoldingSink that takes what it is told to.
type holdingSink struct {
	take bool
	got  []any
}

func (s *holdingSink) Notify(n Notification) bool {
	if s.take {
		s.got = append(s.got, n.Content)
	}
	return s.take
}
func (s *holdingSink) Ended(*Subscription, EndReason) {}
func (s *holdingSink) HoldsRecyclable()               {}

// Delivering recyclable content holds it for each queue or holding sink
// that takes it, holds nothing for one that refuses it, and keeps it for
// good for any other sink, which may keep what it takes.
func TestPublishHoldsRecyclableForQueues(t *testing.T) {
	h := NewHub(0)
	src := &recordingSource{}
	full := NewQueue(1)
	full.Notify(Notification{Sub: &Subscription{}, Content: "filler"})
	taking, refusing := &holdingSink{take: true}, &holdingSink{}
	for i, sink := range []Sink{NewQueue(4), NewQueue(4), full, &sliceSink{}, taking, refusing} {
		subscribe(t, h, NewClient(fmt.Sprint(i), sink), "/R", src)
	}
	r := &recyclable{}
	if n := h.Topic("/R").Publish(r); n != 4 {
		t.Fatalf("Publish delivered to %d, want 4", n)
	}
	// Two queues and the taking holding sink took it, the full queue and
	// the refusing holding sink refused it, the other sink kept it.
	if r.holds != 5 || r.releases != 2 || r.keeps != 1 {
		t.Errorf("holds %d, releases %d, keeps %d; want 5, 2, 1", r.holds, r.releases, r.keeps)
	}
	if len(taking.got) != 1 || len(refusing.got) != 0 {
		t.Errorf("the holding sinks got %d and %d notifications; want 1 and 0", len(taking.got), len(refusing.got))
	}

	one := &recyclable{}
	q := NewQueue(4)
	s, _ := subscribe(t, h, NewClient("one", q), "/One", src)
	if !s.Notify(one) || one.holds != 1 || one.releases != 0 || one.keeps != 0 {
		t.Errorf("Subscription.Notify to a queue: holds %d, releases %d, keeps %d; want 1, 0, 0", one.holds, one.releases, one.keeps)
	}
}

// A queue releases the recyclable content it holds and no consumer will
// take: a notification Drain skips because its subscription ended, and
// what waits when the queue closes. What Drain hands its consumer stays
// held, for the consumer to release.
func TestQueueReleasesWhatItDiscards(t *testing.T) {
	h := NewHub(0)
	src := &recordingSource{}
	q := NewQueue(8)
	c := NewClient("c", q)
	subscribe(t, h, c, "/Kept", src)
	subscribe(t, h, c, "/Ended", src)
	taken, skipped := &recyclable{}, &recyclable{}
	h.Topic("/Kept").Publish(taken)
	h.Topic("/Ended").Publish(skipped)
	if r := h.Unsubscribe(&Request{Op: Unsubscribe, Client: c}, "/Ended"); !r.Status.OK() {
		t.Fatalf("unsubscribe: %v", r)
	}
	events := q.Drain(nil)
	if len(events) != 1 || events[0].Content != taken {
		t.Fatalf("Drain gave %v; want the kept notification alone", events)
	}
	if taken.releases != 0 || skipped.releases != 1 {
		t.Errorf("after Drain: the notification taken released %d times, the one skipped %d; want 0, 1", taken.releases, skipped.releases)
	}
	waiting := &recyclable{}
	h.Topic("/Kept").Publish(waiting)
	q.Close()
	if waiting.holds != 1 || waiting.releases != 1 {
		t.Errorf("after Close: the notification that waited held %d times, released %d; want 1, 1", waiting.holds, waiting.releases)
	}
	if q.Drain(nil) != nil {
		t.Error("a closed queue gave events")
	}
}

// An offer that a queue refuses for want of room, the subscription's
// limit or the queue's capacity, has its room called once, by the next
// Drain, outside the queue's lock: it offers again there. An offer that
// nothing will make room for says so, and its room is never called: an
// ended subscription, a sink that is no Queue, a closed queue, no room
// given (TestStall has a stalled subscription's, TestQueueCloseDropsRoom
// a queue's that closes before it drains). A refused offer keeps no hold
// of its Recyclable content.
func TestOfferRoomOnDrain(t *testing.T) {
	h := NewHub(0)
	for _, tt := range []struct {
		name  string
		sink  Sink
		limit int
		taken int  // offers taken before the refusal
		later bool // the refusal's room is called by a drain
		prep  func(s *Subscription, q *Queue)
		room  bool // a room is given
	}{
		{name: "limit", sink: NewQueue(100), limit: 2, taken: 2, later: true, room: true},
		{name: "capacity", sink: NewQueue(3), taken: 3, later: true, room: true},
		{name: "no room given", sink: NewQueue(3), taken: 3},
		{name: "closed", sink: NewQueue(3), room: true, prep: func(_ *Subscription, q *Queue) { q.Close() }},
		{name: "ended", sink: NewQueue(3), room: true, prep: func(s *Subscription, _ *Queue) { s.Client.Close() }},
		{name: "not a queue", sink: &holdingSink{}, room: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := &limitSource{limit: tt.limit}
			c := NewClient(tt.name, tt.sink)
			s, _ := subscribe(t, h, c, "/"+tt.name, src)
			q, _ := tt.sink.(*Queue)
			if tt.prep != nil {
				tt.prep(s, q)
			}
			calls, again := 0, false
			var room func()
			if tt.room {
				room = func() {
					calls++
					again, _ = s.Offer("again", room) // the queue's lock is not held
				}
			}
			for i := range tt.taken {
				if taken, later := s.Offer(i, room); !taken || later {
					t.Fatalf("offer %d: taken %t, room later %t; want taken", i, taken, later)
				}
			}
			r := &recyclable{}
			taken, later := s.Offer(r, room)
			if taken || later != tt.later || r.holds != r.releases {
				t.Fatalf("offer %d: taken %t, room later %t, held %d and released %d; want refused, later %t, no hold kept", tt.taken, taken, later, r.holds, r.releases, tt.later)
			}
			if calls != 0 {
				t.Fatalf("room called %d times before a drain", calls)
			}
			if q == nil {
				return
			}
			if ev := q.Drain(nil); len(ev) != tt.taken {
				t.Fatalf("the drain took %d notifications, want %d", len(ev), tt.taken)
			}
			want := 0
			if tt.later {
				want = 1
			}
			if calls != want || again != tt.later {
				t.Errorf("the drain called room %d times (its offer taken %t), want %d", calls, again, want)
			}
			q.Drain(nil)
			if calls != want {
				t.Errorf("the next drain called room again: %d calls", calls)
			}
			c.Close()
		})
	}
}

// A queue that closes with an offer refused lets its room go uncalled.
func TestQueueCloseDropsRoom(t *testing.T) {
	h := NewHub(0)
	q := NewQueue(1)
	c := NewClient("c", q)
	s, _ := subscribe(t, h, c, "/X", &recordingSource{})
	room := func() { t.Error("room called after Close") }
	if taken, _ := s.Offer(1, room); !taken {
		t.Fatal("the first offer refused")
	}
	if taken, later := s.Offer(2, room); taken || !later {
		t.Fatalf("an offer to a full queue: taken %t, room later %t", taken, later)
	}
	c.Close()
	q.Close()
	q.Drain(nil)
}

// BenchmarkQueueNotify publishes to one subscriber whose queue its
// consumer drains every 64 notifications, on one goroutine: a stream's
// hot path into a transport's queue, plain and Recyclable content, and
// offered (Subscription.Offer) as a log's transfer does.
func BenchmarkQueueNotify(b *testing.B) {
	for _, tt := range []struct {
		name    string
		content any
		offer   bool
	}{
		{"plain", "sample", false},
		{"recyclable", &recyclable{}, false},
		{"offer", "sample", true},
	} {
		b.Run(tt.name, func(b *testing.B) {
			h := NewHub(0)
			q := NewQueue(4096)
			c := NewClient("c", q)
			s, _ := subscribe(b, h, c, "/Meas/Acc/104", &recordingSource{})
			topic := h.Topic("/Meas/Acc/104")
			room := func() {}
			var buf []Event
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				if tt.offer {
					s.Offer(tt.content, room)
				} else {
					topic.Publish(tt.content)
				}
				if i++; i%64 == 0 {
					buf = q.Drain(buf[:0])
				}
			}
			c.Close()
		})
	}
}
