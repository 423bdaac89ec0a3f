package serial

import (
	"bytes"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"senseboard/clock"
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
	q := resource.NewQueue(QueueSize)
	q.DeferWake(r.AfterPass)
	c := resource.NewClient("test", q)
	s := startSession(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, &lockedWriter{w: rec}, "t", q, c, nil)
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
