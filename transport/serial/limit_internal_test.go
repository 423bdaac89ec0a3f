package serial

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"senseboard/wire"
)

// TestProgramLimitCountsKinds: a program's limit counts connections of
// every kind together, and its refusal says how many of each it holds and
// which flag raises it; a connection counted out makes room.
func TestProgramLimitCountsKinds(t *testing.T) {
	l := NewConnLimit(3)
	for _, k := range []ConnKind{TCPConn, StreamConn, StreamConn} {
		if !l.take(k) {
			t.Fatalf("no room for kind %d under the limit", k)
		}
	}
	if l.take(TCPConn) || l.take(StreamConn) {
		t.Fatal("room over the limit")
	}
	err := programFull(l)
	if !errors.Is(err, ErrTooManyConns) || !strings.Contains(err.Error(), "serves 3 connections at once") ||
		!strings.Contains(err.Error(), "(TCP connections 1, streams of the radio link 2)") || !strings.Contains(err.Error(), "--max-conns") {
		t.Errorf("refusal: %v", err)
	}
	l.put(StreamConn)
	if !l.take(TCPConn) || l.Count(TCPConn) != 2 || l.Count(StreamConn) != 1 {
		t.Errorf("after one stream out and a TCP connection in: TCP %d, streams %d", l.Count(TCPConn), l.Count(StreamConn))
	}
	var none *ConnLimit
	if !none.take(TCPConn) || none.Count(TCPConn) != 0 {
		t.Error("no limit refuses or counts")
	}
	none.put(TCPConn)
	unbounded := NewConnLimit(0)
	for range 5 {
		if !unbounded.take(StreamConn) {
			t.Fatal("a limit of 0 refuses")
		}
	}
	if unbounded.Count(StreamConn) != 5 {
		t.Errorf("a limit of 0 counts %d", unbounded.Count(StreamConn))
	}
}

// TestProgramMaxConns: the default program limit grows with the fleet.
func TestProgramMaxConns(t *testing.T) {
	for _, c := range []struct{ devices, want int }{{1, 1024}, {256, 1024}, {257, 1028}, {2000, 8000}, {5000, 20000}} {
		if got := ProgramMaxConns(c.devices); got != c.want {
			t.Errorf("ProgramMaxConns(%d) = %d, want %d", c.devices, got, c.want)
		}
	}
}

// deadlineConn is the device's end of a connection; it tells the test
// each deadline the device sets on it.
type deadlineConn struct {
	net.Conn
	set chan time.Time
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	c.set <- t
	return c.Conn.SetDeadline(t)
}

// refuseOn hands s a connection that its limits refuse, on a goroutine of
// its own; it returns the client's end, the device's, and a channel closed
// when Admit returns.
func refuseOn(t *testing.T, s *Server) (client net.Conn, dev *deadlineConn, done chan struct{}) {
	t.Helper()
	client, end := net.Pipe()
	if d, ok := t.Deadline(); ok {
		client.SetDeadline(d) // hang protection
	}
	t.Cleanup(func() { client.Close() })
	dev = &deadlineConn{Conn: end, set: make(chan time.Time, 1)}
	done = make(chan struct{})
	go func() {
		defer close(done)
		s.Admit(context.Background(), dev, TCPConn, func(net.Conn) { t.Error("a connection over the limit was served") })
	}()
	return client, dev, done
}

// answers returns the frames the device sends on c until it closes it.
func answers(c net.Conn) ([]wire.Frame, error) {
	dec := wire.NewDecoder(0)
	var got []wire.Frame
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		dec.Feed(buf[:n], func(f wire.Frame) {
			f.Payload = append([]byte(nil), f.Payload...)
			got = append(got, f)
		})
		if err != nil {
			return got, err
		}
	}
}

// helloRefused says hello on c and reports what is wrong with the device's
// answer, or "" when it is a Refuse of the limit and the connection
// closes after it.
func helloRefused(c net.Conn) string {
	b, _ := wire.AppendJSONFrame(nil, wire.Hello, 0, &wire.HelloMsg{Protocol: wire.Version, Client: "refusal test", Session: "over"})
	if _, err := c.Write(b); err != nil {
		return fmt.Sprintf("hello: %v", err)
	}
	got, err := answers(c)
	var m wire.RefuseMsg
	if !errors.Is(err, io.EOF) || len(got) != 1 || got[0].Kind != wire.Refuse || json.Unmarshal(got[0].Payload, &m) != nil || m.Code != wire.RefuseLimit {
		return fmt.Sprintf("answered %v, then %v; want a Refuse of the limit, then the end", got, err)
	}
	return ""
}

// TestRefusingIsBounded: at most a program's cap of refused connections
// wait for their hello at once, held open; one more is closed at once,
// unanswered, and once the waiting ones are answered a refused
// connection is answered again. Without a program limit, the device's
// limit holds the cap.
func TestRefusingIsBounded(t *testing.T) {
	const cap = 3
	for _, c := range []struct {
		name   string
		server func() *Server
		limit  func(*Server) *ConnLimit // holds the cap, once the server is full
	}{
		{"program", func() *Server { return &Server{Program: NewConnLimit(1), HelloTimeout: time.Hour} },
			func(s *Server) *ConnLimit { return s.Program }},
		{"device without a program limit", func() *Server { return &Server{MaxConns: 1, HelloTimeout: time.Hour} },
			func(s *Server) *ConnLimit { return s.conns }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := c.server()
			release, err := s.admit(TCPConn)
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			c.limit(s).maxRefusing = cap
			type held struct {
				client net.Conn
				done   chan struct{}
			}
			var waiting []held
			for range cap {
				client, dev, done := refuseOn(t, s)
				<-dev.set // counted in, waiting for the hello
				waiting = append(waiting, held{client, done})
			}
			client, dev, done := refuseOn(t, s)
			if got, err := answers(client); !errors.Is(err, io.EOF) || len(got) != 0 {
				t.Errorf("refused connection %d: answered %v, then %v; want closed at once, unanswered", cap+1, got, err)
			}
			<-done
			if len(dev.set) != 0 {
				t.Errorf("refused connection %d waited for its hello", cap+1)
			}
			for i, h := range waiting {
				if what := helloRefused(h.client); what != "" {
					t.Errorf("refused connection %d, held: %s", i+1, what)
				}
				<-h.done
			}
			client, _, done = refuseOn(t, s)
			if what := helloRefused(client); what != "" {
				t.Errorf("refused connection after the held ones ended: %s", what)
			}
			<-done
		})
	}
}

// TestRefusalWaitsHelloTimeout: a refused connection has the server's
// HelloTimeout to say hello, the HelloTimeout constant when it has none.
func TestRefusalWaitsHelloTimeout(t *testing.T) {
	for _, c := range []struct{ hello, want time.Duration }{
		{0, HelloTimeout},
		{50 * time.Millisecond, 50 * time.Millisecond},
		{3 * time.Second, 3 * time.Second},
		{time.Hour, time.Hour},
	} {
		s := &Server{MaxConns: 1, HelloTimeout: c.hello}
		release, err := s.admit(TCPConn)
		if err != nil {
			t.Fatal(err)
		}
		before := time.Now()
		client, dev, done := refuseOn(t, s)
		deadline := <-dev.set
		after := time.Now()
		if deadline.Before(before.Add(c.want)) || deadline.After(after.Add(c.want)) {
			t.Errorf("HelloTimeout %v: the refused connection's deadline is %v after it came; want %v",
				c.hello, deadline.Sub(before), c.want)
		}
		client.Close()
		<-done
		release()
	}
}

// warnings records the messages of the warnings logged.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "closed" {
			msg += fmt.Sprintf(" (%v)", a.Value)
		}
		return true
	})
	w.mu.Lock()
	w.msgs = append(w.msgs, msg)
	w.mu.Unlock()
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	msgs := w.msgs
	w.msgs = nil
	return msgs
}

// TestRefusingPastTheCapWarns: connections closed unanswered past the cap
// of refused connections are logged as a warning, at most once a minute,
// with how many were closed since the warning before.
func TestRefusingPastTheCapWarns(t *testing.T) {
	w := &warnings{}
	s := &Server{Program: NewConnLimit(1), HelloTimeout: time.Hour, Log: slog.New(w)}
	release, err := s.admit(TCPConn)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.Program.maxRefusing, s.Program.now = 1, func() time.Time { return now }
	held, dev, heldDone := refuseOn(t, s)
	<-dev.set
	if got := w.take(); len(got) != 1 || !strings.HasPrefix(got[0], "connection refused") {
		t.Fatalf("warnings of the refused connection that waits: %q", got)
	}
	closeUnanswered := func(n int) {
		for range n {
			_, _, done := refuseOn(t, s)
			<-done
		}
	}
	closeUnanswered(3)
	if got := w.take(); len(got) != 1 || !strings.Contains(got[0], "closed unanswered") || !strings.HasSuffix(got[0], "(1)") {
		t.Errorf("three connections closed unanswered: warnings %q; want one, of the first", got)
	}
	now = now.Add(time.Minute)
	closeUnanswered(1)
	if got := w.take(); len(got) != 1 || !strings.HasSuffix(got[0], "(3)") {
		t.Errorf("a minute later one more closed unanswered: warnings %q; want one, of the three since the warning", got)
	}
	held.Close()
	<-heldDone
}
