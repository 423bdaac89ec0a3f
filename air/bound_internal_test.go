package air

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"senseboard/internal/await"
	"senseboard/internal/loopback"
)

// stalledLink is a link joined to a NATS server of the test's through a
// proxy that, once stall is called, takes nothing more from the link's
// connection until resume, as a server that stopped reading: the link's
// writes to its socket fill the socket's buffers and then wait. nc is a
// connection of its own to the server, not through the proxy.
func stalledLink(t *testing.T) (l *Link, nc *nats.Conn, stall, resume func()) {
	t.Helper()
	srv := natsServer(t)
	addr, stall, resume := loopback.Stalling(t, srv.Addr().String())
	l, err := Join("nats://"+addr, Options{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	t.Cleanup(resume) // before the link's Close, which publishes what waits
	nc, err = nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return l, nc, stall, resume
}

// natsServer starts a NATS server of the test's; the test's cleanup
// shuts it down.
func natsServer(t *testing.T) *server.Server {
	t.Helper()
	return natsServerPinging(t, 0)
}

// natsServerPinging is natsServer, pinging its clients every interval
// from when they connect (zero: the server's default, two minutes after a
// first ping two seconds in).
func natsServerPinging(t *testing.T, every time.Duration) *server.Server {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		PingInterval: every, DisableShortFirstPing: every > 0})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(await.Guard) {
		t.Fatal("the server did not start")
	}
	return srv
}

// peerStream adds a device's stream to l, connected to a peer whose
// program's inbox is InboxSubject("peer").
func peerStream(t *testing.T, l *Link) *Stream {
	t.Helper()
	s := newStream(l, "000123", true, time.Hour)
	if err := l.add(s); err != nil {
		t.Fatal(err)
	}
	s.connect("peer", s.id)
	return s
}

// received returns a function that waits until the data messages nc's
// watch got carry n bytes of the stream, checks that they came in order,
// and returns them.
func received(t *testing.T, nc *nats.Conn) func(n int) []byte {
	got, wait := watch(t, nc)
	return func(n int) []byte {
		t.Helper()
		for {
			var data []byte
			msgs := got()
			for i, m := range msgs {
				if m.kind != msgData {
					continue
				}
				if m.seq != uint64(i) {
					t.Fatalf("data message %d came where %d was due", m.seq, i)
				}
				data = append(data, m.body...)
			}
			if len(data) >= n {
				return data
			}
			wait(len(msgs) + 1)
		}
	}
}

// fill writes to s without waiting until s is refused, and returns what
// it wrote: the bytes of pattern from offset on, a thousand at a time.
func fill(t *testing.T, s *Stream, offset int) []byte {
	t.Helper()
	var out []byte
	chunk := make([]byte, 1000)
	for {
		for j := range chunk {
			chunk[j] = pattern(offset + len(out) + j)
		}
		n, err := s.WriteNow(chunk)
		if err != nil {
			t.Fatalf("WriteNow: %v", err)
		}
		out = append(out, chunk[:n]...)
		if n < len(chunk) {
			return out
		}
		if len(out) > 64*sendLimit { // hang guard
			t.Fatalf("%d bytes were written without waiting, and the stream was never refused", len(out))
		}
	}
}

// pattern is the byte at offset k of what fill writes.
func pattern(k int) byte { return byte(k + k/251) }

// fillStuck writes to s without waiting (fill) until the link's sender
// waits for the server, in a write to the connection's socket that has no
// room, and s is refused after that; it returns what it wrote, as fill.
func fillStuck(t *testing.T, s *Stream) []byte {
	t.Helper()
	var out []byte
	for !senderStuck() {
		out = append(out, fill(t, s, len(out))...)
		if len(out) > 64*sendLimit { // hang guard
			t.Fatalf("%d bytes were written, and the link's sender never waited for the server", len(out))
		}
		time.Sleep(time.Millisecond)
	}
	return append(out, fill(t, s, len(out))...)
}

// senderStuck reports whether a link's sender waits in its publish for a
// write to the connection's socket that has no room (its own, or the
// NATS connection's flusher's, which holds the connection's lock).
func senderStuck() bool {
	buf := make([]byte, 4<<20)
	var publishing, writing bool
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		waits := strings.Contains(g, "[IO wait") || strings.Contains(g, "[sync.Mutex.Lock")
		publishing = publishing || waits && strings.Contains(g, "air.(*sender).publish(")
		writing = writing || strings.Contains(g, "poll.(*pollDesc).waitWrite") && strings.Contains(g, "nats.go")
	}
	return publishing && writing
}

// TestStalledServerBoundsAStream: while the NATS server reads nothing, a
// stream that writes without waiting (WriteNow, as a device's connection
// event does) is refused once streamSendBuffer bytes of it wait at the
// link, instead of piling them up there; once the server reads again,
// every byte it took arrives, in order.
func TestStalledServerBoundsAStream(t *testing.T) {
	l, nc, stall, resume := stalledLink(t)
	data := received(t, nc)
	s := peerStream(t, l)
	stall()
	sent := fillStuck(t, s)
	if n := s.unsent.Load(); n > streamSendBuffer {
		t.Errorf("%d bytes of the stream wait at the link, want at most %d", n, streamSendBuffer)
	}
	if n, err := s.WriteNow([]byte("x")); n != 0 || err != nil {
		t.Errorf("WriteNow of a byte with no room: %d, %v; want 0, nil", n, err)
	}
	resume()
	if got := data(len(sent)); string(got) != string(sent) {
		t.Errorf("%d bytes arrived, not the %d written, in order", len(got), len(sent))
	}
}

// TestStalledServerBoundsTheLink: while the NATS server reads nothing,
// the link holds at most sendLimit bytes of all its streams together,
// counting the batch the sender took and cannot publish; a stream is
// refused when the link is full, though it has room of its own. A link of
// more streams than sendLimit/sendShare holds sendShare a stream.
func TestStalledServerBoundsTheLink(t *testing.T) {
	l, _, stall, _ := stalledLink(t)
	add := func(n int) []*Stream {
		streams := make([]*Stream, n)
		for i := range streams {
			streams[i] = peerStream(t, l)
		}
		return streams
	}
	full := func(streams []*Stream, limit int64) {
		t.Helper()
		for i, s := range streams {
			if len(fill(t, s, 0)) == 0 {
				break
			}
			if i == len(streams)-1 {
				t.Fatalf("%d streams have %d bytes waiting at the link, and the link never refused more", len(streams), l.send.size.Load())
			}
		}
		if n := l.send.size.Load(); n > limit+64 || n < limit-streamSendBuffer {
			t.Errorf("%d bytes wait at the link of %d streams, want %d", n, l.nstreams.Load(), limit)
		}
	}
	streams := add(sendLimit / sendShare) // the link's bound is sendLimit yet
	stall()
	fillStuck(t, streams[0])
	full(streams[1:], sendLimit)
	streams = add(4*sendLimit/sendShare - len(streams))
	full(streams, sendShare*l.nstreams.Load())
}

// TestStreamWriteWaitsForRoom: a Write (one that may wait) that finds no
// room at the link waits for it; it ends at its write deadline, with what
// it handed over, and at the stream's close; and once the server reads
// again it hands over the rest, taking the link's room in turns and
// handing back each turn's, and every byte arrives, in order.
func TestStreamWriteWaitsForRoom(t *testing.T) {
	l, nc, stall, resume := stalledLink(t)
	data := received(t, nc)
	s := peerStream(t, l)
	stall()
	sent := fillStuck(t, s)
	write := func(p []byte) (chan error, *atomic.Int64) {
		done, n := make(chan error, 1), new(atomic.Int64)
		go func() {
			k, err := s.Write(p)
			n.Store(int64(k))
			done <- err
		}()
		return done, n
	}
	more := []byte(strings.Repeat("more", 2*streamSendBuffer/4))

	done, n := write(more)
	waiting(t, done)
	s.SetWriteDeadline(time.Unix(1, 0))
	if err := writeEnd(t, done, "a write that waits for room, at its deadline,"); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a write that waits for room, at its deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	sent = append(sent, more[:n.Load()]...)
	s.SetWriteDeadline(time.Time{})

	done, n = write(more)
	waiting(t, done)
	resume()
	if err := writeEnd(t, done, "a write that waited for room, once there is room,"); err != nil || n.Load() != int64(len(more)) {
		t.Errorf("a write that waited for room, once there is room: %d bytes, %v; want %d", n.Load(), err, len(more))
	}
	if n := l.send.reserved.Load(); n != 0 { // the write took the link's room in turns, more than its stream holds
		t.Errorf("the link sets %d bytes aside once the write ended, want 0", n)
	}
	sent = append(sent, more...)
	if got := data(len(sent)); string(got) != string(sent) {
		t.Errorf("%d bytes arrived, not the %d written, in order", len(got), len(sent))
	}

	stall()
	fillStuck(t, s)
	done, _ = write(more)
	waiting(t, done)
	s.Close()
	if err := writeEnd(t, done, "a write that waits for room, when its stream closes,"); !errors.Is(err, net.ErrClosed) {
		t.Errorf("a write that waits for room, when its stream closes: %v, want net.ErrClosed", err)
	}
}

// TestStreamWriteWokenByItsOwnRoom: a Write that waits for its own
// stream's room is woken once the sender published the stream's data
// (sender.publish), which alone wakes it: the link keeps room to spare
// all the test long, and room of the link's wakes only the writers in its
// queue (sender.grant).
func TestStreamWriteWokenByItsOwnRoom(t *testing.T) {
	l, nc, stall, resume := stalledLink(t)
	data := received(t, nc)
	s := peerStream(t, l)
	stall()
	sent := fillStuck(t, s)
	others := l.send.limit()/4*3 + 1 // as if other streams' data waited, all the test long, leaving room
	l.send.size.Add(others)
	defer l.send.size.Add(-others)
	if room := l.send.limit() - l.send.size.Load(); room < 4*streamSendBuffer {
		t.Fatalf("the link has %d bytes of room; the test needs its stream's bound to be what is full", room)
	}
	more := []byte(strings.Repeat("more", 2*streamSendBuffer/4))
	done := waitingWrite(t, s, more)
	resume()
	if err := writeEnd(t, done, "a write that waits for its stream's room, once the stream's data was published,"); err != nil {
		t.Fatalf("a write that waited for its stream's room: %v", err)
	}
	sent = append(sent, more...)
	if got := data(len(sent)); string(got) != string(sent) {
		t.Errorf("%d bytes arrived, not the %d written, in order", len(got), len(sent))
	}
}

// TestWriteNowBesideAWaitingWrite: while a Write of a stream waits for
// room, a WriteNow of the stream (a connection event's, which must not
// wait) returns at once having written nothing, and takes none of the
// room the Write gets: what arrives is the Write's bytes, after what went
// before, in order.
func TestWriteNowBesideAWaitingWrite(t *testing.T) {
	l, nc, stall, resume := stalledLink(t)
	data := received(t, nc)
	s := peerStream(t, l)
	stall()
	sent := fillStuck(t, s)
	more := []byte(strings.Repeat("more", 2*streamSendBuffer/4))
	done := waitingWrite(t, s, more)
	type result struct {
		n   int
		err error
	}
	now := make(chan result, 1)
	go func() {
		n, err := s.WriteNow([]byte("now"))
		now <- result{n, err}
	}()
	select {
	case r := <-now:
		if r.n != 0 || r.err != nil {
			resume()
			t.Fatalf("WriteNow beside a waiting Write: %d, %v; want 0, nil", r.n, r.err)
		}
	case <-time.After(60 * time.Second): // hang guard
		resume()
		t.Fatal("WriteNow waited for the Write of its stream that waits for room")
	}
	resume()
	if err := <-done; err != nil {
		t.Fatalf("a write that waited for room: %v", err)
	}
	sent = append(sent, more...)
	if got := data(len(sent)); string(got) != string(sent) {
		t.Errorf("%d bytes arrived, not the %d written, in order", len(got), len(sent))
	}
}

// TestStreamWriteWaitsUntilItsDeadline: a Write that waits for room with
// a write deadline set ends at the deadline, with os.ErrDeadlineExceeded,
// though nothing else wakes it (a session's writer sets its deadline
// before it writes). The stream is full with nothing of it to publish, and
// nothing else is sent on the link: the sender wakes no writer.
func TestStreamWriteWaitsUntilItsDeadline(t *testing.T) {
	l, _ := rawLink(t, Options{Interval: time.Hour})
	s := peerStream(t, l)
	s.unsent.Store(streamSendBuffer) // as if its data waited for the server
	defer s.unsent.Store(0)
	done := waitingWrite(t, s, []byte("more"))
	s.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	if err := writeEnd(t, done, "a write that waits for room, past its deadline,"); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a write that waits for room, at its deadline: %v, want os.ErrDeadlineExceeded", err)
	}
}

// TestStreamEndWakesAWaitingWrite: a Write that waits for room ends when
// its stream ends, by its Close or lost (as when the NATS connection is),
// with what a write after the end returns, though nothing else wakes it:
// the stream is full with nothing of it to publish, and nothing else is
// sent on the link but the close.
func TestStreamEndWakesAWaitingWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(*Stream)
		want error
	}{
		{"close", func(s *Stream) { s.Close() }, net.ErrClosed},
		{"lost", func(s *Stream) { s.fail(lost("the connection to the NATS server was lost"), false) }, ErrLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := rawLink(t, Options{Interval: time.Hour})
			s := peerStream(t, l)
			s.unsent.Store(streamSendBuffer) // as if its data waited for the server
			defer s.unsent.Store(0)
			others := l.send.limit()/4*3 + 1 // and other streams' data
			l.send.size.Add(others)
			defer l.send.size.Add(-others)
			done := waitingWrite(t, s, []byte("more"))
			tc.end(s)
			if err := writeEnd(t, done, "a write that waits for room, once its stream ended,"); !errors.Is(err, tc.want) {
				t.Errorf("a write that waits for room, at its stream's end: %v, want %v", err, tc.want)
			}
		})
	}
}

// waitingWrite starts a Write of p to s, and returns once it waits for
// room (waiting); done gets the error the Write ends with.
func waitingWrite(t *testing.T, s *Stream, p []byte) (done chan error) {
	t.Helper()
	done = make(chan error, 1)
	go func() {
		_, err := s.Write(p)
		done <- err
	}()
	waiting(t, done)
	return done
}

// writeEnd returns the error a write (waitingWrite's done) ends with; the
// test fails if the write, what, never ends.
func writeEnd(t *testing.T, done chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second): // hang guard
		t.Fatalf("%s never ended", what)
		return nil
	}
}

// waiting waits until a goroutine waits for room at a link's sender; it
// fails the test if the write that should wait, done, ends first.
func waiting(t *testing.T, done chan error) {
	t.Helper()
	for hang := time.Now().Add(60 * time.Second); !waitsForRoom(); time.Sleep(time.Millisecond) { // hang guard
		select {
		case err := <-done:
			t.Fatalf("the write did not wait for room: %v", err)
		default:
		}
		if time.Now().After(hang) {
			t.Fatal("the write never waited for room")
		}
	}
	runtime.Gosched()
}

// TestReconnectKeepsNothing: while the link reconnects to a server it
// lost, its NATS connection keeps nothing to send then, which would add
// to the link's bound: a publish fails at once, a dial and a device's
// probe fail at once with ErrNoServer instead of waiting for the server,
// and a stream whose message the connection refused ends saying why: the
// connection to the server was lost, as the streams the loss ends say
// (a stream may hear of it first by a message refused).
func TestReconnectKeepsNothing(t *testing.T) {
	srv := natsServer(t)
	l, err := Join(srv.ClientURL(), Options{Interval: time.Hour, ReconnectWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	srv.Shutdown()
	for hang := time.Now().Add(60 * time.Second); !l.nc.IsReconnecting(); time.Sleep(time.Millisecond) { // hang guard
		if time.Now().After(hang) {
			t.Fatal("the link never began to reconnect")
		}
	}

	if err := l.nc.Publish("x", make([]byte, 1000)); !errors.Is(err, nats.ErrReconnectBufExceeded) {
		t.Errorf("a publish while the link reconnects: %v, want nats.ErrReconnectBufExceeded", err)
	}
	if n, err := l.nc.Buffered(); n != 0 || err != nil {
		t.Errorf("the connection keeps %d bytes (%v) while it reconnects, want none", n, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), await.Guard) // a dial that waited for the server would end here
	defer cancel()
	if _, err := l.Dial(ctx, "000123"); !errors.Is(err, ErrNoServer) {
		t.Errorf("a dial while the link reconnects: %v, want ErrNoServer", err)
	}
	if _, err := l.Listen("000124"); !errors.Is(err, ErrNoServer) {
		t.Errorf("a device put on the air while the link reconnects: %v, want ErrNoServer", err)
	}

	s := newStream(l, "000125", true, time.Hour) // not the link's: the loss of the connection did not end it
	s.id = 1 << 40
	s.connect("peer", s.id)
	if _, err := s.Write([]byte("lost")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	for hang := time.Now().Add(60 * time.Second); ; time.Sleep(time.Millisecond) { // hang guard: the message was kept
		if ended, _ := s.writeState(); ended {
			break
		}
		if time.Now().After(hang) {
			t.Fatal("a stream whose message the connection refused while it reconnects never ended")
		}
	}
	s.mu.Lock()
	err = s.err
	s.mu.Unlock()
	if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), connectionLost) || !strings.Contains(err.Error(), ErrNoServer.Error()) {
		t.Errorf("a stream whose message the connection refused while it reconnects: %v, want ErrLost saying %q and %q", err, connectionLost, ErrNoServer)
	}
}

// blockedWriters returns how many goroutines wait for room at a link's
// sender (sender.waitRoom).
func blockedWriters() int { return writersIn("[select") }

// writersIn returns how many goroutines of sender.waitRoom are in state
// ("[select", "[sync.Mutex.Lock").
func writersIn(state string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, state) && strings.Contains(g, "air.(*sender).waitRoom(") {
			count++
		}
	}
	return count
}

// blocked waits until n goroutines wait for room at a link's sender.
func blocked(t *testing.T, n int) {
	t.Helper()
	for hang := time.Now().Add(60 * time.Second); blockedWriters() != n; time.Sleep(time.Millisecond) { // hang guard
		if time.Now().After(hang) {
			t.Fatalf("%d writers wait for room, want %d", blockedWriters(), n)
		}
	}
}

// TestStreamEventWakesItsWriterAlone: of many writers that wait for room,
// for their streams' own or in the link's queue, a stream's end or a
// change of its write deadline wakes its own writer and no other; the
// loss of the NATS connection, which ends every stream, wakes each once.
func TestStreamEventWakesItsWriterAlone(t *testing.T) {
	const writers = 500
	for _, tc := range []struct {
		name string
		full func(l *Link, streams []*Stream) (undo func())
	}{
		{"own room", func(l *Link, streams []*Stream) func() {
			for _, s := range streams {
				s.unsent.Store(streamSendBuffer) // as if its data waited for the server
			}
			return func() {
				for _, s := range streams {
					s.unsent.Store(0)
				}
			}
		}},
		{"link's room", func(l *Link, _ []*Stream) func() {
			others := l.send.limit() // as if other streams' data filled the link
			l.send.size.Add(others)
			return func() { l.send.size.Add(-others) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := rawLink(t, Options{Interval: time.Hour})
			streams := make([]*Stream, writers)
			for i := range streams {
				streams[i] = peerStream(t, l)
			}
			defer tc.full(l, streams)()
			done := make([]chan error, writers)
			for i, s := range streams {
				done[i] = make(chan error, 1)
				go func() {
					_, err := s.Write([]byte("more"))
					done[i] <- err
				}()
			}
			blocked(t, writers)
			wakes := func(what string, want int64, do func()) {
				t.Helper()
				before := l.send.wakes.Load()
				do()
				if n := l.send.wakes.Load() - before; n != want {
					t.Errorf("%s woke %d writers that wait for room, want %d", what, n, want)
				}
			}
			wakes("a stream's close", 1, func() { streams[0].Close() })
			if err := writeEnd(t, done[0], "a write that waits for room, once its stream closed,"); !errors.Is(err, net.ErrClosed) {
				t.Errorf("a write that waits for room, at its stream's close: %v, want net.ErrClosed", err)
			}
			wakes("a stream's write deadline", 1, func() { streams[1].SetWriteDeadline(time.Now().Add(time.Hour)) })
			blocked(t, writers-1)
			wakes("the loss of the NATS connection", writers-1, func() { l.disconnected(l.nc, errors.New("cut")) })
			for i := 1; i < writers; i++ {
				if err := writeEnd(t, done[i], "a write that waits for room, once the connection was lost,"); !errors.Is(err, ErrLost) {
					t.Fatalf("a write that waits for room, at the connection's loss: %v, want ErrLost", err)
				}
			}
		})
	}
}

// TestWaitingWriteGetsTheLinksRoomFirst: writers that wait for the link's
// room get it in the order they came, before the writes that must not
// wait (a connection event's, WriteNow) that come after them: while one
// waits, a WriteNow finds no room of the link's, though the link has
// some; the sender sets room aside for the first writer once there is
// room for what it waits for, and wakes it alone.
func TestWaitingWriteGetsTheLinksRoomFirst(t *testing.T) {
	l, nc := rawLink(t, Options{Interval: time.Hour})
	got, wait := watch(t, nc)
	first, second, now := peerStream(t, l), peerStream(t, l), peerStream(t, l)
	others := l.send.limit() // as if other streams' data filled the link
	l.send.size.Add(others)
	done1 := waitingWrite(t, first, make([]byte, 4<<10))
	blocked(t, 1)
	done2 := waitingWrite(t, second, make([]byte, 8<<10))
	blocked(t, 2)
	if n, err := now.WriteNow([]byte("now")); n != 0 || err != nil {
		t.Fatalf("WriteNow with writers that wait for the link's room and no room: %d, %v; want 0, nil", n, err)
	}

	// Room for the first writer alone, as if the server took some of the
	// others' data: it is the first's, whose write ends; the second, which
	// waits for more, waits on, and WriteNow finds no room though there is.
	freed := msgCost + 4<<10
	wakes := l.send.wakes.Load()
	l.send.size.Add(-freed)
	others -= freed
	before := l.send.size.Load()
	l.send.wake() // the sender's round
	if err := writeEnd(t, done1, "the first write that waits for the link's room, once there is room for it,"); err != nil {
		t.Fatalf("the first write that waited for the link's room: %v", err)
	}
	wait(1) // the first's data published
	// The sender counts the data off once its NATS connection took it,
	// which may come after the watcher got it: then the room it took is
	// the link's again.
	for hang := time.Now().Add(60 * time.Second); l.send.size.Load() != before; time.Sleep(time.Millisecond) { // hang guard
		if time.Now().After(hang) {
			t.Fatalf("%d bytes wait at the link once the first's data was published, want the %d before it", l.send.size.Load(), before)
		}
	}
	if n := l.send.wakes.Load() - wakes; n != 1 {
		t.Errorf("room for one writer woke %d, want 1", n)
	}
	if room := l.send.limit() - l.send.size.Load(); room < msgCost+3 {
		t.Fatalf("the link has %d bytes of room; the test needs room for WriteNow's message", room)
	}
	if n, err := now.WriteNow([]byte("now")); n != 0 || err != nil {
		t.Errorf("WriteNow with room, and a writer that waits for the link's room before it: %d, %v; want 0, nil", n, err)
	}
	select {
	case err := <-done2:
		t.Fatalf("the second write that waits for the link's room ended (%v) with room for the first alone", err)
	default:
	}

	l.send.size.Add(-others)
	l.send.wake()
	if err := writeEnd(t, done2, "the second write that waits for the link's room, once there is room,"); err != nil {
		t.Fatalf("the second write that waited for the link's room: %v", err)
	}
	if n, err := now.WriteNow([]byte("now")); n != 3 || err != nil {
		t.Errorf("WriteNow with room and no writer waiting: %d, %v; want 3, nil", n, err)
	}
	wait(3)
	var sizes []int
	for _, m := range got() {
		sizes = append(sizes, len(m.body))
	}
	if want := []int{4 << 10, 8 << 10, 3}; fmt.Sprint(sizes) != fmt.Sprint(want) {
		t.Errorf("the link published data messages of %v bytes, want %v", sizes, want)
	}
	if n := l.send.reserved.Load(); n != 0 {
		t.Errorf("the link sets %d bytes aside once no writer waits, want 0", n)
	}
}

// TestStalledLinkHoldsWhatItCounts: what a link holds that waits to be
// published is what its bound counts, each message's record with its
// encoding: a stalled link filled with data messages of a byte each holds
// in memory no more than 1.5 times what it counts, and at most its bound.
func TestStalledLinkHoldsWhatItCounts(t *testing.T) {
	l, _, stall, _ := stalledLink(t)
	s := peerStream(t, l)
	stall()
	fillStuck(t, s)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	counted := l.send.size.Load()
	streams := 0
	for len(fill1(t, peerStream(t, l))) > 0 {
		streams++
		if streams > 1000 { // hang guard
			t.Fatal("a thousand streams filled, and the link never refused more")
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	counted = l.send.size.Load() - counted
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d streams of one-byte messages: the link counts %d bytes more, the heap grew %d bytes", streams, counted, grew)
	if n := l.send.size.Load(); n > l.send.limit() {
		t.Errorf("%d bytes wait at the link, more than its bound of %d", n, l.send.limit())
	}
	if grew > counted*3/2 {
		t.Errorf("the heap grew %d bytes, more than 1.5 times the %d the link counts for what it holds", grew, counted)
	}
}

// fill1 writes to s a byte at a time without waiting, until s is refused,
// and returns what it wrote.
func fill1(t *testing.T, s *Stream) []byte {
	t.Helper()
	var out []byte
	for {
		b := []byte{pattern(len(out))}
		n, err := s.WriteNow(b)
		if err != nil {
			t.Fatalf("WriteNow: %v", err)
		}
		if n == 0 {
			return out
		}
		out = append(out, b...)
	}
}

// fullConn is a connection to the server whose socket, once full is set,
// has no room, as on a server that stopped reading long before: a write
// times out having written nothing, as when its deadline (NATS's
// FlusherTimeout, a minute) passed.
type fullConn struct {
	net.Conn
	full *atomic.Bool
}

func (c *fullConn) Write(p []byte) (int, error) {
	if !c.full.Load() {
		return c.Conn.Write(p)
	}
	return 0, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.ErrDeadlineExceeded}
}

// TestStalledServerDropsTheConnection: a write to a server that stopped
// reading, on a socket that has no room left, times out having written
// nothing, whether NATS's flusher wrote or a publish that filled NATS's
// buffer; the link's connection then drops at once, its streams end
// saying why, and it reconnects once the server reads again. NATS alone
// closes the connection only after a write that sent part of what it
// had (with nats.ReconnectOnFlusherError, after a flusher's write that
// failed, which a publish's is not). The server pings seldom, so that
// its pings, which the link answers, make no writes of their own.
func TestStalledServerDropsTheConnection(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(l *Link, s *Stream) error
	}{
		{"the flusher's write", func(_ *Link, s *Stream) error {
			_, err := s.Write([]byte("x"))
			return err
		}},
		{"a publish's write", func(l *Link, _ *Stream) error {
			return l.nc.Publish(InboxSubject("peer"), make([]byte, 40<<10)) // more than NATS's buffer of 32 KiB
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := natsServerPinging(t, time.Hour)
			addr, stall, resume := loopback.Stalling(t, srv.Addr().String())
			full := new(atomic.Bool)
			hooks := &testHooks{wrapConn: func(c net.Conn) net.Conn { return &fullConn{Conn: c, full: full} }}
			l, err := Join("nats://"+addr, Options{Interval: time.Hour, hooks: hooks})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			t.Cleanup(resume)
			s := peerStream(t, l)
			stall()
			full.Store(true)
			tc.write(l, s) // the publish's may fail: what it wrote is lost
			ended := make(chan error, 1)
			go func() {
				_, err := s.Read(make([]byte, 1))
				ended <- err
			}()
			select {
			case err := <-ended:
				if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), os.ErrDeadlineExceeded.Error()) {
					t.Errorf("the stream, once a write to the server timed out: %v, want ErrLost saying %q", err, os.ErrDeadlineExceeded)
				}
			case <-time.After(60 * time.Second): // hang guard
				t.Fatal("a write to the server timed out having written nothing, and the link's connection never dropped")
			}
			full.Store(false)
			resume()
			for hang := time.Now().Add(60 * time.Second); !l.Connected(); time.Sleep(time.Millisecond) { // hang guard
				if time.Now().After(hang) {
					t.Fatal("the link never reconnected once the server read again")
				}
			}
		})
	}
}

// TestNewStreamGrowsTheRoomOfAWaitingWrite: a link of more than
// sendLimit/sendShare streams grows its bound with each stream it adds;
// a writer that waits for the link's room gets what a new stream adds,
// though the sender publishes nothing.
func TestNewStreamGrowsTheRoomOfAWaitingWrite(t *testing.T) {
	l, _ := rawLink(t, Options{Interval: time.Hour})
	for range sendLimit / sendShare {
		peerStream(t, l)
	}
	s := peerStream(t, l)
	others := l.send.limit() // as if other streams' data filled the link
	l.send.size.Add(others)
	done := waitingWrite(t, s, make([]byte, sendShare/2))
	peerStream(t, l)
	if err := writeEnd(t, done, "a write that waits for the link's room, once a new stream grew it,"); err != nil {
		t.Errorf("a write that waited for the link's room: %v", err)
	}
}

// TestWaitingWriteThatLeavesPassesItsTurn: a writer at the head of the
// link's queue that leaves it at its write deadline, before its turn,
// with room set aside for it, or having taken that room and written
// nothing, hands its turn and that room to the writer behind it at once,
// though the sender publishes nothing: a writer behind
// does not take room before the head, though the room fits it, and once
// every write ended the link sets no room aside.
func TestWaitingWriteThatLeavesPassesItsTurn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first int                          // bytes the first writer writes
		leave func(l *Link, first *Stream) // has the first writer leave the queue
	}{
		{"before its turn", 8 << 10, func(l *Link, first *Stream) {
			l.send.grant()
			if n := l.send.queued.Load(); n != 2 {
				t.Errorf("room for the second writer alone gave room to %d of the two, want none: the first waits before it", 2-n)
			}
			first.SetWriteDeadline(time.Unix(1, 0))
		}},
		{"with room set aside", 4 << 10, func(l *Link, first *Stream) {
			first.mu.Lock() // the first, woken, finds its deadline passed before it takes its room
			first.wdl = time.Unix(1, 0)
			l.send.grant()
			if n := l.send.reserved.Load(); n != msgCost+4<<10 {
				t.Errorf("the link set %d bytes aside for the first writer, want %d", n, msgCost+4<<10)
			}
			first.mu.Unlock()
		}},
		{"with its room taken", 4 << 10, func(l *Link, first *Stream) {
			l.send.mu.Lock() // the first, woken, waits for it to take its room
			l.send.grantLocked()
			for hang := time.Now().Add(60 * time.Second); writersIn("[sync.Mutex.Lock") != 1; time.Sleep(time.Millisecond) { // hang guard
				if time.Now().After(hang) {
					t.Fatal("the first writer, woken with room set aside for it, never came to take it")
				}
			}
			first.mu.Lock() // its write, with the room, finds its deadline passed and writes nothing
			first.wdl = time.Unix(1, 0)
			first.mu.Unlock()
			l.send.mu.Unlock()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := rawLink(t, Options{Interval: time.Hour})
			first, second := peerStream(t, l), peerStream(t, l)
			others := l.send.limit() // as if other streams' data filled the link
			l.send.size.Add(others)
			done1 := waitingWrite(t, first, make([]byte, tc.first))
			blocked(t, 1)
			done2 := waitingWrite(t, second, make([]byte, 4<<10))
			blocked(t, 2)
			l.send.size.Add(-(msgCost + 4<<10)) // room for the second writer's data alone
			tc.leave(l, first)
			if err := writeEnd(t, done1, "the first write that waits for the link's room, past its deadline,"); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("the first write that waited for the link's room, past its deadline: %v, want os.ErrDeadlineExceeded", err)
			}
			if err := writeEnd(t, done2, "the second write that waits for the link's room, once the first left,"); err != nil {
				t.Errorf("the second write that waited for the link's room: %v", err)
			}
			if n := l.send.reserved.Load(); n != 0 {
				t.Errorf("the link sets %d bytes aside once no writer waits, want 0", n)
			}
		})
	}
}

// TestWriteNowKeepsTheLinksBound: whatever room the link has left, a
// WriteNow takes no more than that, its messages' encodings and records
// (pending) together, and it takes some once there is room for a message
// of a byte, whatever its header. The link's sender waits for a stalled
// server meanwhile, so that it counts nothing off.
func TestWriteNowKeepsTheLinksBound(t *testing.T) {
	l, _, stall, _ := stalledLink(t)
	stall()
	fillStuck(t, peerStream(t, l))
	s := peerStream(t, l)
	s.wseq = 1 << 20 // a header longer than a new stream's
	p := make([]byte, 100)
	for free := range 2 * msgCost {
		before := l.send.size.Load()
		others := l.send.limit() - free - before // as if other streams' data filled the link but free bytes
		l.send.size.Add(others)
		n, err := s.WriteNow(p)
		l.send.size.Add(-others)
		if err != nil {
			t.Fatalf("WriteNow with %d bytes of the link's room: %v", free, err)
		}
		if took := l.send.size.Load() - before; took > free {
			t.Errorf("WriteNow with %d bytes of the link's room took %d, for %d bytes of data", free, took, n)
		}
		if most := pendingSize + 1 + 2*binary.MaxVarintLen64 + 1; n == 0 && free >= most { // a message of a byte, whatever its header
			t.Errorf("WriteNow with %d bytes of the link's room wrote nothing, want some", free)
		}
	}
}
