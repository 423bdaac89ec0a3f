package air

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// watch subscribes nc to every inbox and returns the messages it gets, in
// the order the server delivered them, and a function that waits until
// it has n of them.
func watch(t *testing.T, nc *nats.Conn) (got func() []message, wait func(n int)) {
	t.Helper()
	var mu sync.Mutex
	var msgs []message
	more := make(chan struct{}, 1)
	sub, err := nc.Subscribe(InboxSubject("*"), func(m *nats.Msg) {
		pm, err := parseMessage(m.Data)
		if err != nil {
			t.Errorf("message %q: %v", m.Data, err)
			return
		}
		pm.body = append([]byte(nil), pm.body...)
		mu.Lock()
		msgs = append(msgs, pm)
		mu.Unlock()
		select {
		case more <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	sub.SetPendingLimits(-1, -1)
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	got = func() []message {
		mu.Lock()
		defer mu.Unlock()
		return append([]message(nil), msgs...)
	}
	wait = func(n int) {
		hang := time.After(60 * time.Second) // hang guard
		for len(got()) < n {
			select {
			case <-more:
			case <-hang:
				t.Fatalf("%d messages of %d came", len(got()), n)
			}
		}
	}
	return got, wait
}

// watchedStream is a link on a server of the test's, a stream of it with
// id 1, and watch's view of every inbox on that server.
func watchedStream(t *testing.T) (l *Link, s *Stream, got func() []message, wait func(n int)) {
	l, nc := rawLink(t, Options{Interval: time.Hour})
	got, wait = watch(t, nc)
	s = newStream(l, "000123", true, time.Hour)
	s.id = 1
	return l, s, got, wait
}

// TestSenderKeepsEachStreamsOrder: writers of many streams at once, two
// streams to a shard and a writer to a stream, each hand the sender their
// messages; every message reaches the peer's inbox once, each stream's in
// the order its writer handed them over, and a mark handed over after
// them all comes after them all, once the sender counted every one of
// them off the link's bound (sender.size).
func TestSenderKeepsEachStreamsOrder(t *testing.T) {
	l, nc := rawLink(t, Options{Interval: time.Hour})
	got, wait := watch(t, nc)
	const streams, each = 2 * sendShards, 200
	to := InboxSubject("peer")
	var wg sync.WaitGroup
	for id := range uint64(streams) {
		s := newStream(l, "000123", true, time.Hour)
		s.id = id + 1
		wg.Go(func() {
			for seq := range uint64(each) {
				body := make([]byte, 1+int(seq%7)*100) // batches of various sizes
				if err := l.send.send(s, to, message{kind: msgData, stream: s.id, seq: seq, body: body}); err != nil {
					t.Errorf("stream %d, message %d: %v", s.id, seq, err)
					return
				}
			}
		})
	}
	wg.Wait()
	l.mark(time.Now())
	wait(streams*each + 1)
	msgs := got()
	next := map[uint64]uint64{}
	for i, m := range msgs {
		if m.kind == msgMark {
			if i != len(msgs)-1 {
				t.Errorf("the mark came %d messages before the end", len(msgs)-1-i)
			}
			continue
		}
		if m.seq != next[m.stream] {
			t.Fatalf("stream %d: message %d came where %d was due", m.stream, m.seq, next[m.stream])
		}
		next[m.stream]++
	}
	for id := range uint64(streams) {
		if next[id+1] != each {
			t.Errorf("stream %d: %d messages came, want %d", id+1, next[id+1], each)
		}
	}
	if n := l.send.size.Load(); n != 0 {
		t.Errorf("the link counts %d bytes as waiting once the mark after every message came, want 0", n)
	}
}

// TestSenderClose: what waits when the sender closes is published before
// close returns; a message handed over after refuses with ErrClosed, and
// so does a writer that waited for room. The test's sender starts only
// once close has sealed it, so that its messages surely wait at close.
func TestSenderClose(t *testing.T) {
	l, s, got, wait := watchedStream(t)
	sn := newSender(l)
	to := InboxSubject("peer")
	for seq := range uint64(100) {
		if err := sn.send(s, to, message{kind: msgData, stream: 1, seq: seq, body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	closed := make(chan struct{})
	go func() {
		sn.close()
		close(closed)
	}()
	for hang := time.Now().Add(60 * time.Second); !sn.sealed.Load(); runtime.Gosched() { // hang guard
		if time.Now().After(hang) {
			t.Fatal("close never sealed the sender")
		}
	}
	go sn.run()
	<-closed
	// A message the connection publishes after close returned comes
	// after what close published.
	if err := l.nc.Publish(to, appendMessage(nil, message{kind: msgMark, seq: 1})); err != nil {
		t.Fatal(err)
	}
	before := -1 // the messages before the mark
	for before < 0 {
		msgs := got()
		for i, m := range msgs {
			if m.kind == msgMark {
				before = i
				break
			}
		}
		if before < 0 {
			wait(len(msgs) + 1)
		}
	}
	if before != 100 {
		t.Errorf("%d messages came before close returned, want the 100 that waited", before)
	}
	if err := sn.send(s, to, message{kind: msgData, stream: 1, seq: 100, body: []byte("x")}); !errors.Is(err, ErrClosed) {
		t.Errorf("handed over after close: %v, want ErrClosed", err)
	}
	sn.size.Store(sendLimit) // as if the sender were behind: a writer waits for room
	if _, err := sn.waitRoom(s, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("waited for room after close: %v, want ErrClosed", err)
	}
}

// TestSenderCloseEndsAWaitingWrite: a writer that waits for the link's
// room when the sender closes stops waiting, with ErrClosed, though its
// stream goes on.
func TestSenderCloseEndsAWaitingWrite(t *testing.T) {
	l, s, _, _ := watchedStream(t)
	sn := newSender(l)
	go sn.run()
	sn.size.Store(sendLimit) // as if the sender were behind
	done := make(chan error, 1)
	go func() {
		_, err := sn.waitRoom(s, 1)
		done <- err
	}()
	blocked(t, 1)
	sn.close()
	if err := writeEnd(t, done, "a writer that waits for room, once the sender closed,"); !errors.Is(err, ErrClosed) {
		t.Errorf("a writer that waits for room, at the sender's close: %v, want ErrClosed", err)
	}
}

// waitsForRoom reports whether a goroutine waits for room at a link's
// sender (sender.waitRoom).
func waitsForRoom() bool {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "[select") && strings.Contains(g, "air.(*sender).waitRoom(") {
			return true
		}
	}
	return false
}

// TestSenderFailsStreamOfRefusedMessage: a message the NATS connection
// does not take (here to a subject it refuses) ends its stream with
// ErrLost, as a write that failed.
func TestSenderFailsStreamOfRefusedMessage(t *testing.T) {
	l, _ := rawLink(t, Options{Interval: time.Hour})
	s := newStream(l, "000123", true, time.Hour)
	s.connect("a peer", 7)
	if err := l.add(s); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("x")); err != nil {
		t.Fatalf("write: %v; the sender, not the writer, meets the closed connection", err)
	}
	if _, err := s.Read(make([]byte, 1)); !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "did not take") {
		t.Errorf("read after a refused message: %v, want ErrLost", err)
	}
}

// TestSenderKeepsSmallBuffers: a batch of many small messages (a fleet's
// keepalives), or of a few large ones, leaves its shard no list longer
// than keepSendMsgs, nor a buffer larger than keepSendBuffer, for the
// batches after it. The test's
// sender starts once the batch waits, so that it takes the batch in one
// round.
func TestSenderKeepsSmallBuffers(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind byte
		n    int // messages in the first batch
		body int // bytes each
	}{
		{"many small", msgKeepalive, 4 * keepSendMsgs, 0},
		{"few large", msgData, 4, keepSendBuffer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, s, got, wait := watchedStream(t)
			sn := newSender(l)
			t.Cleanup(sn.close)
			to := InboxSubject("peer")
			body := make([]byte, tc.body)
			for seq := range uint64(tc.n) {
				if err := sn.send(s, to, message{kind: tc.kind, stream: 1, seq: seq, body: body}); err != nil {
					t.Fatal(err)
				}
			}
			go sn.run()
			wait(tc.n)
			// The next batch swaps the shard's list and buffer for the ones
			// the sender kept of the batch before.
			if err := sn.send(s, to, message{kind: msgKeepalive, stream: 1, seq: uint64(tc.n)}); err != nil {
				t.Fatal(err)
			}
			wait(tc.n + 1)
			if len(got()) != tc.n+1 {
				t.Fatalf("%d messages came, want %d", len(got()), tc.n+1)
			}
			sh := &sn.shards[s.id%sendShards]
			sh.mu.Lock()
			msgs, buf := cap(sh.msgs), cap(sh.buf)
			sh.mu.Unlock()
			if msgs > keepSendMsgs || buf > keepSendBuffer {
				t.Errorf("the shard keeps room for %d messages and %d bytes after a batch of %d of %d bytes; want at most %d and %d", msgs, buf, tc.n, tc.body, keepSendMsgs, keepSendBuffer)
			}
		})
	}
}
