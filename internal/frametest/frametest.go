// Package frametest is a test helper: exchanging frames of the wire
// protocol with a device on a stream, as the tests of the line protocol
// and of the radio link do.
package frametest

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"senseboard/wire"
)

// Exchange sends frames on a stream and reads what comes back until the
// Pong of ping id 99; it fails the test when the device closes the stream
// or the hang protection ends the wait first.
func Exchange(t *testing.T, c net.Conn, frames ...[]byte) []wire.Frame {
	t.Helper()
	frames = append(frames, wire.AppendFrame(nil, wire.Ping, 99, nil))
	return ReadUntil(t, c, func(f wire.Frame) bool { return f.Kind == wire.Pong && f.ID == 99 }, frames...)
}

// ReadUntil sends frames on a stream and reads what comes back until a
// frame for which last is true; it fails the test when the device closes
// the stream or the hang protection ends the wait first.
func ReadUntil(t *testing.T, c net.Conn, last func(wire.Frame) bool, frames ...[]byte) []wire.Frame {
	t.Helper()
	go func() {
		for _, b := range frames {
			if _, err := c.Write(b); err != nil {
				return
			}
		}
	}()
	c.SetReadDeadline(time.Now().Add(30 * time.Second)) // hang protection
	dec := wire.NewDecoder(0)
	buf := make([]byte, 8192)
	var got []wire.Frame
	for {
		n, err := c.Read(buf)
		done := false
		dec.Feed(buf[:n], func(f wire.Frame) {
			f.Payload = append([]byte(nil), f.Payload...)
			got = append(got, f)
			done = done || last(f)
		})
		if done {
			return got
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("no last frame; frames %v", got)
		}
		if err != nil {
			t.Fatalf("the stream closed before the last frame: %v; frames %v", err, got)
		}
	}
}

// Answered reports whether a frame of id got an answer: a frame with its
// id that is not a notification.
func Answered(frames []wire.Frame, id uint32) bool {
	for _, f := range frames {
		if f.ID == id && f.Kind != wire.Notification && f.Kind != wire.Pong {
			return true
		}
	}
	return false
}

// Answer is what Script answers a frame of a kind with.
type Answer struct {
	Kind    wire.Kind
	Payload []byte
}

// Script plays a device that answers what a test, or a fuzz input, wants:
// each frame of a kind in answers gets an answer of its Kind and Payload,
// with the frame's id, where "SESSION" becomes the session token of the
// client's last hello. It returns when conn fails, and closes it.
func Script(conn net.Conn, answers map[wire.Kind]Answer) {
	defer conn.Close()
	dec := wire.NewDecoder(0)
	buf := make([]byte, 4096)
	token := []byte("SESSION")
	for {
		n, err := conn.Read(buf)
		dec.Feed(buf[:n], func(f wire.Frame) {
			if f.Kind == wire.Hello {
				var h wire.HelloMsg
				json.Unmarshal(f.Payload, &h)
				token = []byte(h.Session)
			}
			if a, ok := answers[f.Kind]; ok {
				conn.Write(wire.AppendFrame(nil, a.Kind, f.ID, bytes.ReplaceAll(a.Payload, []byte("SESSION"), token)))
			}
		})
		if err != nil {
			return
		}
	}
}
