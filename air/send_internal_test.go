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
// them all comes after them all.
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
}

// TestSenderClose: what waits when the sender closes is published; a
// message handed over after refuses with ErrClosed, and so does a writer
// that waited for room.
func TestSenderClose(t *testing.T) {
	l, s, got, wait := watchedStream(t)
	to := InboxSubject("peer")
	for seq := range uint64(100) {
		if err := l.send.send(s, to, message{kind: msgData, stream: 1, seq: seq, body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	l.send.close()
	wait(100)
	if err := l.send.send(s, to, message{kind: msgData, stream: 1, seq: 100, body: []byte("x")}); !errors.Is(err, ErrClosed) {
		t.Errorf("handed over after close: %v, want ErrClosed", err)
	}
	l.send.size.Store(sendLimit) // as if the sender were behind: a writer waits for room
	if err := l.send.send(s, to, message{kind: msgData, stream: 1, seq: 100, body: []byte("x")}); !errors.Is(err, ErrClosed) {
		t.Errorf("waited for room after close: %v, want ErrClosed", err)
	}
	if n := len(got()); n != 100 {
		t.Errorf("%d messages came, want 100", n)
	}
}

// TestSenderWaitsForRoom: a writer that finds sendLimit bytes waiting
// waits until the sender takes them, and its messages go after them. The
// test holds the sender in a round, at a shard's lock, while the writer
// hands it more than the limit.
func TestSenderWaitsForRoom(t *testing.T) {
	l, s, got, wait := watchedStream(t)
	to := InboxSubject("peer")
	body := make([]byte, maxChunk)
	n := sendLimit/len(body) + 8 // more than the limit
	held := &l.send.shards[sendShards-1].mu
	held.Lock()
	done := make(chan error, 1)
	go func() {
		for seq := range uint64(n) {
			if err := l.send.send(s, to, message{kind: msgData, stream: 1, seq: seq, body: body}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for hang := time.Now().Add(60 * time.Second); l.send.size.Load() < sendLimit; runtime.Gosched() { // hang guard
		if time.Now().After(hang) {
			t.Fatalf("%d bytes wait, never the limit", l.send.size.Load())
		}
	}
	select {
	case err := <-done:
		t.Fatalf("the writer handed over all of %d messages past the limit: %v", n, err)
	default:
	}
	held.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wait(n)
	for i, m := range got() {
		if m.seq != uint64(i) {
			t.Fatalf("message %d came where %d was due", m.seq, i)
		}
	}
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
