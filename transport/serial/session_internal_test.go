package serial

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"senseboard/clock"
	"senseboard/internal/await"
	"senseboard/resource"
	"senseboard/wire"
)

// writeRecorder is a stream that records each write.
type writeRecorder struct {
	mu     sync.Mutex
	writes [][]byte
}

func (w *writeRecorder) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}

func (w *writeRecorder) SetWriteDeadline(time.Time) error { return nil }

// frames returns the frames written so far and how many writes carried them.
func (w *writeRecorder) frames() (frames []wire.Frame, writes int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	dec := wire.NewDecoder(0)
	for _, b := range w.writes {
		dec.Feed(b, func(f wire.Frame) {
			f.Payload = bytes.Clone(f.Payload) // the decoder reuses its buffer
			frames = append(frames, f)
		})
	}
	return frames, len(w.writes)
}

// acceptAll is a Source that takes every subscriber.
type acceptAll struct{}

func (acceptAll) Subscribe(*resource.Topic, *resource.Request) resource.Response {
	return resource.OK(nil)
}
func (acceptAll) Unsubscribed(*resource.Topic) {}

// The notifications that the calls of one scheduler pass publish leave in
// one write when the pass ends, even when the pass takes a while between
// them.
func TestNotificationsOfAPassLeaveInOneWrite(t *testing.T) {
	rec := &writeRecorder{}
	r := clock.NewReal()
	t.Cleanup(r.Close)
	q := resource.NewQueue(QueueSize)
	q.DeferWake(r.AfterPass)
	c := resource.NewClient("test", q)
	s := startSession(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, &lockedWriter{w: rec}, "t", q, c, nil, nil)
	defer s.end()
	hub := resource.NewHub(0)
	for i, uri := range []string{"/A", "/B", "/C"} {
		if _, r := hub.Subscribe(&resource.Request{Op: resource.Subscribe, Client: c}, uri, acceptAll{}); !r.Status.OK() {
			t.Fatalf("subscribe %s: %v", uri, r)
		}
		s.subs[uri] = uint32(i + 1)
	}
	at := r.Now() + time.Millisecond
	clock.At(r, at, func() {
		// calls made by a call, due when it is, run in its pass
		for i, uri := range []string{"/A", "/B", "/C"} {
			clock.At(r, at, func() {
				hub.Topic(uri).Publish(i)
				// a writer woken by this notification would write it alone now
				time.Sleep(2 * time.Millisecond)
			})
		}
	})
	for hang := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		frames, writes := rec.frames()
		if len(frames) == 3 {
			if writes != 1 {
				t.Errorf("3 notifications of one pass took %d writes, want 1", writes)
			}
			for i, f := range frames {
				if f.Kind != wire.Notification || f.ID != uint32(i+1) || string(f.Payload) != string(rune('0'+i)) {
					t.Errorf("frame %d: %v %d %q, want the notification of request %d with %d", i, f.Kind, f.ID, f.Payload, i+1, i)
				}
			}
			return
		}
		if time.Now().After(hang) {
			t.Fatalf("%d frames written in a minute, want 3", len(frames))
		}
	}
}

// pacedSession starts a session with three subscriptions, /A, /B and /C,
// made by requests 1, 2 and 3, on clk with interval as a server's
// WriteInterval.
func pacedSession(t *testing.T, clk clock.Clock, interval time.Duration) (*writeRecorder, *resource.Hub) {
	t.Helper()
	rec := &writeRecorder{}
	_, hub := pacedSessionTo(t, clk, interval, &lockedWriter{w: rec})
	return rec, hub
}

// pacedSessionTo is pacedSession writing to w, and returns the session.
func pacedSessionTo(t *testing.T, clk clock.Clock, interval time.Duration, w *lockedWriter) (*session, *resource.Hub) {
	t.Helper()
	q, p := sessionQueue(clk, interval)
	c := resource.NewClient("test", q)
	s := startSession(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, w, "t", q, c, nil, p)
	t.Cleanup(s.end)
	hub := resource.NewHub(0)
	for i, uri := range []string{"/A", "/B", "/C"} {
		if _, r := hub.Subscribe(&resource.Request{Op: resource.Subscribe, Client: c}, uri, acceptAll{}); !r.Status.OK() {
			t.Fatalf("subscribe %s: %v", uri, r)
		}
		s.subs[uri] = uint32(i + 1)
	}
	return s, hub
}

// quantumSession is pacedSession on a real clock whose quantum is the
// write interval, as a fleet's, writing without waiting as a TCP
// connection does; it returns the clock and the session too.
func quantumSession(t *testing.T, quantum time.Duration) (*clock.Real, *writeRecorder, *session, *resource.Hub) {
	t.Helper()
	r := clock.NewRealQuantum(quantum)
	t.Cleanup(r.Close)
	now := &nowRecorder{}
	s, hub := pacedSessionTo(t, r, quantum, newLockedWriter(now))
	return r, &now.writeRecorder, s, hub
}

// checkNotifications checks that frames are the notifications of requests
// 1, 2, ... with 0, 1, ... in order.
func checkNotifications(t *testing.T, frames []wire.Frame) {
	t.Helper()
	for i, f := range frames {
		if f.Kind != wire.Notification || f.ID != uint32(i+1) || string(f.Payload) != string(rune('0'+i)) {
			t.Errorf("frame %d: %v %d %q, want the notification of request %d with %d", i, f.Kind, f.ID, f.Payload, i+1, i)
		}
	}
}

// waitFrames waits until rec holds n frames and returns them with the
// number of writes that carried them.
func waitFrames(t *testing.T, rec *writeRecorder, n int) ([]wire.Frame, int) {
	t.Helper()
	for hang := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		frames, writes := rec.frames()
		if len(frames) >= n {
			return frames, writes
		}
		if time.Now().After(hang) {
			t.Fatalf("%d frames written in a minute, want %d", len(frames), n)
		}
	}
}

// With a write interval, a notification that finds no write within the
// interval leaves at once, and those published in the interval after a
// write wait for its end and leave together in one write.
func TestWriteIntervalGathersNotifications(t *testing.T) {
	v := clock.NewVirtual()
	rec, hub := pacedSession(t, v, 50*time.Millisecond)

	hub.Topic("/A").Publish(0)
	if _, writes := waitFrames(t, rec, 1); writes != 1 {
		t.Fatalf("the first notification took %d writes, want 1", writes)
	}
	v.Advance(10 * time.Millisecond)
	hub.Topic("/B").Publish(1)
	v.Advance(30 * time.Millisecond)
	hub.Topic("/C").Publish(2)
	v.Advance(9 * time.Millisecond) // 49 ms after the first write
	time.Sleep(10 * time.Millisecond)
	if frames, _ := rec.frames(); len(frames) != 1 {
		t.Fatalf("%d frames written within the interval of the first write, want 1", len(frames))
	}
	v.Advance(time.Millisecond)
	frames, writes := waitFrames(t, rec, 3)
	if writes != 2 {
		t.Errorf("3 notifications took %d writes, want 2: the first alone, the two of its interval together", writes)
	}
	checkNotifications(t, frames)

	// Once the interval after the last write has passed, the next one
	// leaves at once again.
	v.Advance(time.Second)
	hub.Topic("/A").Publish(3)
	if _, writes := waitFrames(t, rec, 4); writes != 3 {
		t.Errorf("a notification after a quiet second took write %d, want 3", writes)
	}
}

// A server without a write interval, as a single device's is by default,
// writes each notification at once on a clock without passes, however
// close together they come.
func TestNoWriteIntervalWritesAtOnce(t *testing.T) {
	if (&Server{}).WriteInterval != 0 {
		t.Fatal("a server's write interval is not zero by default")
	}
	v := clock.NewVirtual()
	rec, hub := pacedSession(t, v, 0)
	for i, uri := range []string{"/A", "/B", "/C"} {
		hub.Topic(uri).Publish(i)
		if _, writes := waitFrames(t, rec, i+1); writes != i+1 {
			t.Fatalf("notification %d left in write %d, want %d", i+1, writes, i+1)
		}
	}
}

// A write without waiting on a TCP connection succeeds after a deadline
// that an earlier write set has passed (a past deadline fails every write
// of the connection, one that does not wait too), and what it wrote
// follows what the earlier write wrote.
func TestWriteNowAfterADeadlinePassed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	w := newLockedWriter(conn.(deadliner))
	if w.now == nil {
		t.Fatal("a TCP connection has no writer that does not wait")
	}
	if _, err := w.Write([]byte("a")); err != nil {
		t.Fatal(err)
	}
	conn.SetWriteDeadline(time.Now().Add(-time.Second)) // as if WriteTimeout had passed since
	w.mu.Lock()
	n, err := w.writeNowLocked([]byte("bc"))
	w.mu.Unlock()
	if n != 2 || err != nil {
		t.Fatalf("a write without waiting after the deadline passed wrote %d bytes, %v; want 2, nil", n, err)
	}
	got := make([]byte, 3)
	if _, err := io.ReadFull(client, got); err != nil || string(got) != "abc" {
		t.Fatalf("the client read %q, %v; want \"abc\"", got, err)
	}
}

// On the real clock a write interval's wake is a call of the clock: the
// notifications of one pass still leave together, in one write when the
// pass ends, and the first after a quiet interval leaves at once.
func TestWriteIntervalOnTheRealClock(t *testing.T) {
	r := clock.NewReal()
	t.Cleanup(r.Close)
	rec, hub := pacedSession(t, r, time.Hour)
	at := r.Now() + time.Millisecond
	clock.At(r, at, func() {
		for i, uri := range []string{"/A", "/B", "/C"} {
			clock.At(r, at, func() {
				hub.Topic(uri).Publish(i)
				// a writer woken by this notification would write it alone now
				time.Sleep(2 * time.Millisecond)
			})
		}
	})
	frames, writes := waitFrames(t, rec, 3)
	if writes != 1 {
		t.Errorf("3 notifications of one pass took %d writes, want 1", writes)
	}
	checkNotifications(t, frames)
}

// On a real clock whose quantum is the write interval (a fleet's), a
// session writes once a pass: what the calls of a pass publish leaves when
// that pass ends, also when the interval since the last write ends only
// later in the quantum, not a pass later; a pong to a ping read between
// two passes leaves with the next pass's write.
func TestWriteIntervalOfTheClocksQuantum(t *testing.T) {
	const quantum = 50 * time.Millisecond
	r, rec, s, hub := quantumSession(t, quantum)
	type seen struct{ frames, writes int }
	ends := make(chan seen, 2)
	passEnd := func(then func()) {
		// after the session's wake, which the pass deferred first
		r.AfterPass(func() {
			frames, writes := rec.frames()
			ends <- seen{len(frames), writes}
			then()
		})
	}
	// The first pass a quantum after the clock's start at the earliest.
	at := r.Now() + quantum
	clock.At(r, at, func() {
		hub.Topic("/A").Publish(0)
		// A fleet's pass takes a while: its write leaves well after the
		// pass began, and the interval since it ends well after the next
		// pass begins, a quantum after this one. Its calls are short, as
		// a fleet's are: the runner that finds them due, none held up
		// for the clock's watchdog to replace it, runs the pass's end,
		// below, before it begins another pass.
		for range 5 {
			clock.At(r, at, func() { time.Sleep(quantum / 10) }) // due, so in this pass
		}
		passEnd(func() {
			// Once the first pass has ended, however late it began or
			// long it took: the second pass's call, which only a pass
			// that begins now can run, a quantum after the first at the
			// earliest (the interval since the write of the first ends
			// within it); then a ping, read outside the passes, whose
			// pong's wake is due after the call.
			clock.At(r, r.Now(), func() {
				hub.Topic("/B").Publish(1)
				hub.Topic("/C").Publish(2)
				passEnd(func() {})
			})
			s.handle(wire.Frame{Kind: wire.Ping, ID: 9})
		})
	})
	for i, want := range []seen{{1, 1}, {4, 2}} {
		if got := <-ends; got != want {
			t.Errorf("at the end of pass %d: %d frames in %d writes, want %d in %d", i+1, got.frames, got.writes, want.frames, want.writes)
		}
	}
	frames, _ := waitFrames(t, rec, 4)
	if f := frames[1]; f.Kind != wire.Pong || f.ID != 9 {
		t.Errorf("the second frame: %v %d, want the pong to ping 9", f.Kind, f.ID)
	}
	checkNotifications(t, append(frames[:1:1], frames[2:]...))
}

// On a clock that runs its calls in passes, a notification published
// between passes (by a request, say) within the interval since the last
// write waits for the next pass's end, as a pong does, not leaving at once
// in a write of its own.
func TestWriteIntervalBetweenPasses(t *testing.T) {
	const quantum = 50 * time.Millisecond
	r, rec, _, hub := quantumSession(t, quantum)
	writes := make(chan int, 1)
	clock.At(r, r.Now()+quantum, func() {
		hub.Topic("/A").Publish(0)
		// after the session's wake, which the pass deferred first: no
		// pass is under way, and none begins before this returns
		r.AfterPass(func() {
			hub.Topic("/B").Publish(1)
			_, n := rec.frames()
			writes <- n
		})
	})
	if n := <-writes; n != 1 {
		t.Errorf("a notification published between passes, within the interval of the last write, made %d writes, want 1", n)
	}
	frames, n := waitFrames(t, rec, 2)
	if n != 2 {
		t.Errorf("2 notifications took %d writes, want 2", n)
	}
	checkNotifications(t, frames)
}

// On a clock whose quantum is the write interval, a pong to a ping read
// between passes leaves at the end of the next pass: in a write of its
// own when that pass publishes nothing to the session (its calls are
// other devices') and the interval since the last write ends only later
// in it, not with what the pass after publishes; in one write with what
// the next pass publishes, also after the pong's call.
func TestPongLeavesWithTheNextPass(t *testing.T) {
	const quantum = 100 * time.Millisecond
	r, rec, s, hub := quantumSession(t, quantum)
	// Each pass's call is scheduled once the pass before has ended, for
	// the time that ends it or later, however late a busy machine runs
	// the passes: only a pass that begins after can run it.
	next := func(f func()) { clock.At(r, r.Now(), f) }
	// a ping read between passes, after the session's wake, which the
	// pass deferred first
	ping := func(id uint32) { s.handle(wire.Frame{Kind: wire.Ping, ID: id}) }
	clock.At(r, r.Now()+quantum, func() {
		hub.Topic("/A").Publish(0)
		// the write leaves well after the pass began
		time.Sleep(quantum / 2)
		r.AfterPass(func() {
			ping(9)
			next(func() { // the next pass's, another device's
				r.AfterPass(func() {
					next(func() {
						hub.Topic("/B").Publish(1)
						r.AfterPass(func() {
							ping(10)
							next(func() { hub.Topic("/C").Publish(2) })
						})
					})
				})
			})
		})
	})
	frames, writes := waitFrames(t, rec, 5)
	if writes != 4 {
		t.Errorf("a notification, a pong, a notification, and a pong with a notification, a pass apart, took %d writes, want 4", writes)
	}
	var notifications []wire.Frame
	for i, f := range frames {
		switch i {
		case 1, 3:
			if want := uint32(8 + i/2 + 1); f.Kind != wire.Pong || f.ID != want {
				t.Errorf("frame %d: %v %d, want the pong to ping %d", i, f.Kind, f.ID, want)
			}
		default:
			notifications = append(notifications, f)
		}
	}
	checkNotifications(t, notifications)
}

// TestPacerStopIsFinal: once stop has returned, no wake of the pacer is
// pending, whichever of stop and a later called at the same time (a
// notification published as the session ends) ran first; a later or a
// pong after stop wakes nothing.
func TestPacerStopIsFinal(t *testing.T) {
	for round := range 200 {
		vc := clock.NewVirtual()
		var woke atomic.Int32
		wake := func() { woke.Add(1) }
		p := newPacer(vc, time.Millisecond, wake)
		p.writing() // the wake is due after the interval, not now
		var wg sync.WaitGroup
		wg.Go(func() { p.later(wake) })
		if round%2 == 0 {
			runtime.Gosched() // later first, most of the time
		}
		p.stop()
		wg.Wait()
		p.later(wake)
		p.pong(1, false)
		vc.Advance(time.Second) // runs what is due on this goroutine
		if n := woke.Load(); n != 0 {
			t.Fatalf("round %d: the pacer woke the writer %d times after stop", round, n)
		}
	}
}

// counted is notification content that counts its holds
// (resource.Recyclable): its maker's, taken when made, and those the
// queue's delivery adds. The last release spoils it, as a reuse would.
type counted struct {
	v    atomic.Int64
	refs atomic.Int32
	kept atomic.Bool
}

func (c *counted) Hold() { c.refs.Add(1) }
func (c *counted) Keep() { c.kept.Store(true) }
func (c *counted) Release() {
	if c.refs.Add(-1) == 0 {
		c.v.Store(-1)
	}
}
func (c *counted) AppendJSON(b []byte) []byte { return strconv.AppendInt(b, c.v.Load(), 10) }

// A session releases a recyclable notification once it has encoded it,
// so that its maker may reuse it; not before, and only its own hold.
func TestSessionReleasesEncodedNotifications(t *testing.T) {
	rec, hub := pacedSession(t, clock.NewVirtual(), 0)
	var made []*counted
	for i, uri := range []string{"/A", "/B", "/C"} {
		c := &counted{}
		c.v.Store(int64(i))
		c.refs.Store(1) // the maker's hold while it publishes
		if n := hub.Topic(uri).Publish(c); n != 1 {
			t.Fatalf("publish %s: %d subscribers took it, want 1", uri, n)
		}
		c.Release()
		made = append(made, c)
	}
	frames, _ := waitFrames(t, rec, 3)
	checkNotifications(t, frames) // none spoilt before it was encoded
	// The session releases what it encoded before it writes it.
	for i, c := range made {
		if refs := c.refs.Load(); refs != 0 {
			t.Errorf("notification %d still has %d holds once written", i, refs)
		}
		if c.kept.Load() {
			t.Errorf("notification %d kept for good by a session's queue", i)
		}
	}
}

// nowRecorder is a stream that writes without waiting (NowWriter), and
// records its writes.
type nowRecorder struct{ writeRecorder }

func (w *nowRecorder) WriteNow(p []byte) (int, error) { return w.Write(p) }

// errorLog records the messages of the errors logged.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *errorLog) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelError }
func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *errorLog) WithGroup(string) slog.Handler      { return l }

// A session on a connection that writes without waiting (a TCP
// connection, a NowWriter) has no writer goroutine: a notification is
// written on the goroutine that publishes it, before Publish returns. One
// whose content does not encode is logged as an error, and the others
// still go out.
func TestSessionWritesOnThePublisher(t *testing.T) {
	rec := &nowRecorder{}
	errs := &errorLog{}
	q := resource.NewQueue(QueueSize)
	c := resource.NewClient("test", q)
	s := startSession(slog.New(errs), nil, newLockedWriter(rec), "t", q, c, nil, nil)
	defer s.end()
	hub := resource.NewHub(0)
	for i, uri := range []string{"/A", "/B"} {
		if _, r := hub.Subscribe(&resource.Request{Op: resource.Subscribe, Client: c}, uri, acceptAll{}); !r.Status.OK() {
			t.Fatalf("subscribe %s: %v", uri, r)
		}
		s.subs[uri] = uint32(i + 1)
	}
	hub.Topic("/A").Publish(0)
	if frames, writes := rec.frames(); len(frames) != 1 || writes != 1 {
		t.Fatalf("once Publish returned: %d frames in %d writes, want the notification", len(frames), writes)
	}
	hub.Topic("/B").Publish(math.NaN()) // JSON has no NaN
	hub.Topic("/A").Publish(2)
	if frames, _ := rec.frames(); len(frames) != 2 || frames[1].ID != 1 || string(frames[1].Payload) != "2" {
		t.Errorf("after a notification that does not encode: frames %v, want the next one of /A", frames)
	}
	errs.mu.Lock()
	defer errs.mu.Unlock()
	if len(errs.msgs) != 1 || errs.msgs[0] != "encode notification" {
		t.Errorf("errors logged %q, want the one notification that does not encode", errs.msgs)
	}
}

// writeFrames decodes each write rec holds into the frames it carried.
func writeFrames(rec *writeRecorder) [][]wire.Frame {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var writes [][]wire.Frame
	for _, b := range rec.writes {
		var frames []wire.Frame
		wire.NewDecoder(0).Feed(b, func(f wire.Frame) {
			f.Payload = bytes.Clone(f.Payload)
			frames = append(frames, f)
		})
		writes = append(writes, frames)
	}
	return writes
}

// describe names frames for messages: N1=0 is the notification of request
// 1 with 0, P7 the pong to ping 7.
func describe(frames []wire.Frame) string {
	var b strings.Builder
	for i, f := range frames {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch f.Kind {
		case wire.Notification:
			fmt.Fprintf(&b, "N%d=%s", f.ID, f.Payload)
		case wire.Pong:
			fmt.Fprintf(&b, "P%d", f.ID)
		default:
			fmt.Fprintf(&b, "%v%d", f.Kind, f.ID)
		}
	}
	return b.String()
}

// pingSession starts a session with a subscription, /A, made by request
// 1, whose writes rec records, on v with interval as a server's
// WriteInterval; ping hands the session a ping.
func pingSession(t *testing.T, v *clock.Virtual, rec deadliner, interval time.Duration) (s *session, hub *resource.Hub, ping func(id uint32)) {
	t.Helper()
	q, p := sessionQueue(v, interval)
	c := resource.NewClient("test", q)
	s = startSession(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, newLockedWriter(rec), "t", q, c, nil, p)
	t.Cleanup(s.end)
	hub = resource.NewHub(0)
	if _, r := hub.Subscribe(&resource.Request{Op: resource.Subscribe, Client: c}, "/A", acceptAll{}); !r.Status.OK() {
		t.Fatalf("subscribe /A: %v", r)
	}
	s.subs["/A"] = 1
	return s, hub, func(id uint32) { s.handle(wire.Frame{Kind: wire.Ping, ID: id}) }
}

// With a write interval, the pong to a ping of a session that streams
// waits for the session's next write as a notification does: it leaves in
// the one write of the notifications that wait, and on a session with
// nothing to write once the interval since the last write has passed, or
// at once after a quiet interval. Without an interval, or without a
// subscription, it leaves at once, but after the pongs that wait still:
// pongs leave in the order of their pings. The session writes on
// the goroutine that wakes it (a TCP connection's), so each step's writes
// are done when the step returns.
func TestPongLeavesWithTheIntervalWrite(t *testing.T) {
	const interval = 100 * time.Millisecond
	v := clock.NewVirtual()
	rec := &nowRecorder{}
	session, hub, ping := pingSession(t, v, rec, interval)
	steps := []struct {
		what   string
		do     func()
		writes []string // all the writes so far
	}{
		{"a notification after a quiet interval", func() { hub.Topic("/A").Publish(0) }, []string{"N1=0"}},
		{"a notification 10 ms after the write", func() { v.Advance(10 * time.Millisecond); hub.Topic("/A").Publish(1) }, []string{"N1=0"}},
		{"a ping 20 ms after the write", func() { v.Advance(10 * time.Millisecond); ping(7) }, []string{"N1=0"}},
		{"99 ms after the write", func() { v.Advance(79 * time.Millisecond) }, []string{"N1=0"}},
		{"the interval after the write", func() { v.Advance(time.Millisecond) }, []string{"N1=0", "P7 N1=1"}},
		// nothing waits: the pong waits for the end of the interval alone
		{"a ping 20 ms after the write", func() { v.Advance(20 * time.Millisecond); ping(8) }, []string{"N1=0", "P7 N1=1"}},
		{"99 ms after the write", func() { v.Advance(79 * time.Millisecond) }, []string{"N1=0", "P7 N1=1"}},
		{"the interval after the write", func() { v.Advance(time.Millisecond) }, []string{"N1=0", "P7 N1=1", "P8"}},
		{"a ping after a quiet interval", func() { v.Advance(time.Second); ping(9) }, []string{"N1=0", "P7 N1=1", "P8", "P9"}},
		// the last subscription ends while a pong waits: the pong of a
		// ping after it follows the one that waits, not leaving at once
		{"a ping 20 ms after the write", func() { v.Advance(20 * time.Millisecond); ping(10) }, []string{"N1=0", "P7 N1=1", "P8", "P9"}},
		{"a ping after the unsubscription", func() { session.forget("/A"); ping(11) }, []string{"N1=0", "P7 N1=1", "P8", "P9"}},
		{"the interval after the write", func() { v.Advance(80 * time.Millisecond) }, []string{"N1=0", "P7 N1=1", "P8", "P9", "P10 P11"}},
		{"a ping without subscriptions, none waiting", func() { ping(12) }, []string{"N1=0", "P7 N1=1", "P8", "P9", "P10 P11", "P12"}},
	}
	for i, st := range steps {
		st.do()
		var got []string
		for _, w := range writeFrames(&rec.writeRecorder) {
			got = append(got, describe(w))
		}
		if !slices.Equal(got, st.writes) {
			t.Fatalf("step %d, %s: writes %q, want %q", i+1, st.what, got, st.writes)
		}
	}

	// Without an interval the pong leaves at once, as a notification does.
	rec = &nowRecorder{}
	_, _, ping = pingSession(t, clock.NewVirtual(), rec, 0)
	ping(1)
	if got := writeFrames(&rec.writeRecorder); len(got) != 1 || describe(got[0]) != "P1" {
		t.Errorf("without an interval, a ping's answer: writes %v, want the pong at once", got)
	}

	// A session that streams nothing has no write for a pong to share:
	// each leaves at once, within the interval too, so that pings measure
	// the round trip.
	rec = &nowRecorder{}
	v = clock.NewVirtual()
	q, p := sessionQueue(v, interval)
	s := startSession(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, newLockedWriter(rec), "t", q, resource.NewClient("test", q), nil, p)
	t.Cleanup(s.end)
	var want []string
	for id := range uint32(3) {
		s.handle(wire.Frame{Kind: wire.Ping, ID: id + 1})
		want = append(want, fmt.Sprintf("P%d", id+1))
		var got []string
		for _, w := range writeFrames(&rec.writeRecorder) {
			got = append(got, describe(w))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("a session without subscriptions, ping %d %v after the one before: writes %q, want %q", id+1, time.Millisecond, got, want)
		}
		v.Advance(time.Millisecond)
	}
}

// A client that pings faster than its pongs leave gets those beyond
// maxWaitingPongs at once: what waits for a session's write stays bounded.
func TestWaitingPongsAreBounded(t *testing.T) {
	v := clock.NewVirtual()
	rec := &nowRecorder{}
	_, hub, ping := pingSession(t, v, rec, 100*time.Millisecond)
	hub.Topic("/A").Publish(0) // the interval starts
	for id := range uint32(maxWaitingPongs + 1) {
		ping(id + 1)
	}
	v.Advance(100 * time.Millisecond)
	writes := writeFrames(&rec.writeRecorder)
	if len(writes) != 3 || describe(writes[1]) != fmt.Sprintf("P%d", maxWaitingPongs+1) || len(writes[2]) != maxWaitingPongs {
		t.Fatalf("%d pings within an interval: writes %v; want the notification, the last pong at once, the %d others at the interval's end",
			maxWaitingPongs+1, writes, maxWaitingPongs)
	}
}

// A session whose last subscription ended answers a ping at once only
// when no pong of its streaming is on its way: a pong gathered for a write
// that waits for the connection (a response being written holds it) is
// followed, not overtaken, by the pong of a ping read meanwhile.
func TestQuietPongFollowsAPongBeingWritten(t *testing.T) {
	const interval = 100 * time.Millisecond
	v := clock.NewVirtual()
	rec := &nowRecorder{}
	s, hub, ping := pingSession(t, v, rec, interval)
	hub.Topic("/A").Publish(0) // written at once: the interval starts
	ping(7)                    // waits for the interval's end
	s.w.mu.Lock()              // a response is being written
	v.Advance(interval)        // the write of pong 7 waits for the connection
	s.forget("/A")
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		ping(8)
	}()
	select {
	case <-answered:
	case <-time.After(time.Minute): // a hang guard
		s.w.mu.Unlock()
		t.Fatal("ping 8, read while pong 7 waits for the connection, was answered at once, ahead of it or not")
	}
	s.w.mu.Unlock()
	waitFrames(t, &rec.writeRecorder, 2)
	v.Advance(interval) // the next write, pong 8's
	waitFrames(t, &rec.writeRecorder, 3)
	var got []string
	for _, w := range writeFrames(&rec.writeRecorder) {
		got = append(got, describe(w))
	}
	if want := []string{"N1=0", "P7", "P8"}; !slices.Equal(got, want) {
		t.Fatalf("writes %q, want %q", got, want)
	}
}

// On a line, whose writes may wait, a pong leaves in the
// one write of the notifications that wait, as on a TCP connection.
func TestPongOnALineLeavesWithTheIntervalWrite(t *testing.T) {
	v := clock.NewVirtual()
	rec := &writeRecorder{}
	_, hub, ping := pingSession(t, v, rec, 100*time.Millisecond)
	hub.Topic("/A").Publish(0)
	waitFrames(t, rec, 1) // the write that starts the interval
	v.Advance(10 * time.Millisecond)
	hub.Topic("/A").Publish(1)
	ping(7)
	v.Advance(90 * time.Millisecond)
	waitFrames(t, rec, 3)
	writes := writeFrames(rec)
	if len(writes) != 2 || describe(writes[1]) != "P7 N1=1" {
		t.Errorf("writes %v, want the first notification, then the second with the pong", writes)
	}
}

// A line's session takes the notifications of a pass that fill their
// topic's Limit at once, on the goroutine that publishes them: three of a
// topic whose Limit is 2, published back to back in one pass (a stream
// catching up, ECG at 512 Hz on a fleet's clock of 100 ms), all leave,
// rather than the third finding the first two still waiting for a writer
// goroutine to be scheduled.
func TestLineTakesAFullTopicAtOnce(t *testing.T) {
	r := clock.NewReal()
	t.Cleanup(r.Close)
	for round := range 50 {
		rec := &writeRecorder{}
		q, p := sessionQueue(r, 0)
		c := resource.NewClient("test", q)
		s := startSession(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, &lockedWriter{w: rec}, "t", q, c, nil, p)
		hub := resource.NewHub(0)
		if _, r := hub.Subscribe(&resource.Request{Op: resource.Subscribe, Client: c}, "/ECG", frontEnd{}); !r.Status.OK() {
			t.Fatalf("subscribe: %v", r)
		}
		s.subs["/ECG"] = 1
		clock.At(r, r.Now(), func() {
			for i := range 3 {
				hub.Topic("/ECG").Publish(i)
			}
		})
		frames, _ := waitFrames(t, rec, 3)
		s.end()
		if len(frames) != 3 {
			t.Fatalf("round %d: %d frames, want 3", round, len(frames))
		}
	}
}

// frontEnd accepts every subscription to a topic of which two
// notifications may wait, as the ECG's front end holds two.
type frontEnd struct{ acceptAll }

func (frontEnd) Subscribe(t *resource.Topic, _ *resource.Request) resource.Response {
	t.Limit = 2
	return resource.OK(nil)
}

// end waits for the goroutine that finishes a line's write, to its last
// step: the flush again of what came while it wrote.
func TestEndWaitsForTheWriteOfALine(t *testing.T) {
	w := &gateWriter{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	q := resource.NewQueue(QueueSize)
	s := startSession(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, &lockedWriter{w: w}, "t", q, resource.NewClient("test", q), nil, nil)
	s.gather = func(b []byte) []byte { return append(b, "frame"...) }
	var again atomic.Bool
	s.again = func() {
		time.Sleep(20 * time.Millisecond) // end, not waiting, would be gone
		again.Store(true)
	}
	s.flush() // a goroutine writes, and waits for the gate
	await.Within(t, w.entered, "the flush has not written")
	s.flush() // finds the write under way: flush again after it
	s.end()   // interrupts the write, which opens the gate
	if !again.Load() {
		t.Error("end returned before the goroutine that wrote for the line flushed again")
	}
}

// gateWriter's writes wait for its gate, which a past write deadline (an
// interrupt) opens; the write then succeeds, as one that was done as the
// interrupt came.
type gateWriter struct {
	writeRecorder
	gate    chan struct{}
	once    sync.Once
	entered chan struct{} // receives when a write waits
}

func (w *gateWriter) Write(p []byte) (int, error) {
	select {
	case w.entered <- struct{}{}:
	default:
	}
	<-w.gate
	return w.writeRecorder.Write(p)
}

func (w *gateWriter) SetWriteDeadline(t time.Time) error {
	if !t.IsZero() && t.Before(time.Now()) {
		w.once.Do(func() { close(w.gate) })
	}
	return nil
}

// A pseudo-terminal takes a session's notifications on the goroutine that
// wakes it, as a TCP connection does, while it has room: six of a topic
// whose Limit is 2, published back to back in one pass, all leave, where a
// goroutine started for each write would still hold the line when the
// fifth came, and the fifth would be dropped.
func TestPTYTakesNotificationsAtOnce(t *testing.T) {
	r := clock.NewReal()
	t.Cleanup(r.Close)
	for round := range 20 {
		pt, err := OpenPTY("")
		if err != nil {
			t.Fatal(err)
		}
		q, p := sessionQueue(r, 0)
		c := resource.NewClient("test", q)
		s := startSession(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, newLockedWriter(pt), "t", q, c, nil, p)
		hub := resource.NewHub(0)
		if _, r := hub.Subscribe(&resource.Request{Op: resource.Subscribe, Client: c}, "/ECG", frontEnd{}); !r.Status.OK() {
			t.Fatalf("subscribe: %v", r)
		}
		s.subs["/ECG"] = 1
		taken := make(chan int)
		clock.At(r, r.Now(), func() {
			n := 0
			for i := range 6 {
				n += hub.Topic("/ECG").Publish(i)
			}
			taken <- n
		})
		n := <-taken
		s.end()
		pt.Close()
		if n != 6 {
			t.Fatalf("round %d: %d of 6 notifications taken", round, n)
		}
	}
}

// offerer offers n notifications to sub, as a log's transfer does: when
// the session's queue has no room for one, it goes on when the queue
// calls it back (resource.Subscription.Offer).
type offerer struct {
	mu       sync.Mutex
	sub      *resource.Subscription
	next, n  int
	pad      string
	waited   int // refusals that a room call follows
	unwaited int // refusals that none follows
}

func (o *offerer) pump() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.next < o.n {
		taken, later := o.sub.Offer(fmt.Sprintf("%05d%s", o.next, o.pad), o.pump)
		switch {
		case taken:
			o.next++
			continue
		case later:
			o.waited++
		default:
			o.unwaited++
		}
		return
	}
}

// window is a Source of topics of which 16 notifications may wait, as a
// log's transfer lets wait.
type window struct{ acceptAll }

func (window) Subscribe(t *resource.Topic, _ *resource.Request) resource.Response {
	t.Limit = 16
	return resource.OK(nil)
}

// A notification that a session's queue refused is offered again as soon
// as the session's writer has taken what waited, not on the device's
// clock. 20 windows of a topic of which 16 may wait go out with a write
// interval on a clock that does not move, all but the last window's
// notifications (a full topic wakes the writer at once), and the rest
// when the interval ends: on a line whose writes each go to a goroutine
// (a serial port), whose first write waits until the producer has been
// refused, and on a pseudo-terminal that the test reads. Offered again
// after a millisecond of the clock, as before, they left two windows a
// pass of a fleet's clock.
func TestRefusedOfferGoesOnWhenTheWriterTakes(t *testing.T) {
	const n, interval = 20 * 16, 100 * time.Millisecond
	for _, line := range []string{"serial port", "pty"} {
		t.Run(line, func(t *testing.T) {
			var rec *writeRecorder
			var w *lockedWriter
			var gate *gateWriter
			if line == "pty" {
				rec = &writeRecorder{}
				w = ptyReadInto(t, rec)
			} else {
				gate = &gateWriter{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
				rec, w = &gate.writeRecorder, &lockedWriter{w: gate}
			}
			v := clock.NewVirtual()
			q, p := sessionQueue(v, interval)
			c := resource.NewClient("test", q)
			s := startSession(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, w, "t", q, c, nil, p)
			t.Cleanup(s.end) // before the pty's
			sub, r := resource.NewHub(0).Subscribe(&resource.Request{Op: resource.Subscribe, Client: c}, "/Log", window{})
			if !r.Status.OK() {
				t.Fatalf("subscribe: %v", r)
			}
			s.subs["/Log"] = 1
			o := &offerer{sub: sub, n: n, pad: strings.Repeat("x", 1000)}
			o.pump()
			if gate != nil {
				// The first notification's write waits, and a window
				// after it fills the topic: the next is refused.
				if o.next != 17 || o.waited != 1 {
					t.Fatalf("with the first write waiting: %d offers taken, %d refused to wait for room; want 17, 1", o.next, o.waited)
				}
				gate.once.Do(func() { close(gate.gate) })
			}
			waitFrames(t, rec, n-15)
			v.Advance(interval)
			frames, _ := waitFrames(t, rec, n)
			if len(frames) != n {
				t.Fatalf("%d frames, want %d", len(frames), n)
			}
			for i, f := range frames {
				if want := fmt.Sprintf(`"%05d`, i); f.Kind != wire.Notification || !strings.HasPrefix(string(f.Payload), want) {
					t.Fatalf("frame %d: %v %.8s, want notification %d", i, f.Kind, f.Payload, i)
				}
			}
			o.mu.Lock()
			defer o.mu.Unlock()
			if o.unwaited != 0 {
				t.Errorf("%d refusals without a room call", o.unwaited)
			}
		})
	}
}

// ptyReadInto returns the writer of a new pseudo-terminal whose terminal
// side the test reads into rec, until it ends.
func ptyReadInto(t *testing.T, rec *writeRecorder) *lockedWriter {
	t.Helper()
	pt, err := OpenPTY("")
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile(pt.Path(), os.O_RDONLY|syscall.O_NOCTTY, 0)
	if err != nil {
		pt.Close()
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		io.Copy(rec, tty)
	}()
	t.Cleanup(func() {
		tty.Close()
		<-read
		pt.Close()
	})
	return newLockedWriter(pt)
}

// A flush does a bounded part of its work on the goroutine that wakes the
// writer (the end of a clock's pass, shared by a fleet's sessions), also
// when what it drains calls back producers that fill the queue again at
// once (resource.Subscription.Offer's room): on a connection that takes
// every write at once (a TCP connection whose reader keeps up), a log's
// transfer would otherwise go out whole within one flush, holding up the
// clock's pass. The rest a goroutine of the session's writes (again).
func TestFlushLeavesRefillsToTheSession(t *testing.T) {
	const n, interval = 20 * 16, 100 * time.Millisecond
	now := &nowRecorder{}
	v := clock.NewVirtual()
	q, p := sessionQueue(v, interval)
	c := resource.NewClient("test", q)
	s := startSession(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, newLockedWriter(now), "t", q, c, nil, p)
	t.Cleanup(s.end)
	goOn := make(chan struct{})
	s.again = func() { <-goOn; s.flush() }
	sub, r := resource.NewHub(0).Subscribe(&resource.Request{Op: resource.Subscribe, Client: c}, "/Log", window{})
	if !r.Status.OK() {
		t.Fatalf("subscribe: %v", r)
	}
	s.subs["/Log"] = 1
	o := &offerer{sub: sub, n: n, pad: strings.Repeat("x", 500)}
	s.flushMu.Lock() // a write under way: the window fills and the next is refused
	o.pump()
	s.flushMu.Unlock()
	if o.next != 16 || o.waited != 1 {
		t.Fatalf("with a write under way: %d offers taken, %d refused to wait for room; want 16, 1", o.next, o.waited)
	}
	s.flush() // as the clock's pass ends
	if frames, _ := now.frames(); len(frames) > 2*16 {
		t.Errorf("one flush on its caller's goroutine wrote %d notifications of a transfer that refills the queue as it drains, want at most 2 windows", len(frames))
	}
	close(goOn)
	frames, _ := waitFrames(t, &now.writeRecorder, n)
	for i, f := range frames {
		if want := fmt.Sprintf(`"%05d`, i); f.Kind != wire.Notification || !strings.HasPrefix(string(f.Payload), want) {
			t.Fatalf("frame %d: %v %.8s, want notification %d", i, f.Kind, f.Payload, i)
		}
	}
}
