// Package client is the Go client of the device's serial line protocol,
// over a serial port, the device's pseudo-terminal or TCP: wbcmd and the
// tests use it.
//
//	c, err := client.Dial(ctx, "TCP127.0.0.1:7809", nil)
//	env, err := c.Do(ctx, resource.Get, "/Info")
//	sub, env, err := c.Subscribe(ctx, "/Meas/Acc/104")
//	for n := range sub.C() { ... }
//	sub.Unsubscribe(ctx)
//	c.Close()
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	bugserial "go.bug.st/serial"
	"golang.org/x/sys/unix"

	"senseboard/internal/inbox"
	"senseboard/resource"
	"senseboard/wire"
)

// Errors of Dial.
var (
	ErrBusy        = errors.New("port busy")
	ErrNoAnswer    = errors.New("device not answering")
	ErrRefused     = errors.New("session refused")
	ErrClosed      = errors.New("connection closed")
	ErrNotPortName = errors.New("not a port")
)

// ErrNoSession is a connection whose session the device no longer holds:
// it ended it (a client that stopped reading, or was silent too long) on a
// line it cannot close, and answers with wire.CodeNoSession. The
// connection closes with it, so that its calls and subscriptions fail
// rather than wait.
var ErrNoSession = errors.New("the device holds no session for this connection")

// noSession is the reason of a connection closed by an Error of code
// wire.CodeNoSession.
func noSession(m wire.ErrorMsg) error {
	return fmt.Errorf("%w (%w)", ErrNoSession, &RemoteError{m.Error})
}

// ErrEnded is a subscription the device ended on its own (a reset, a mode
// change, power off): its Err wraps ErrEnded and gives the device's reason.
var ErrEnded = errors.New("the device ended the subscription")

// RemoteError is the device's error frame: what it could not act on.
type RemoteError struct{ Msg string }

func (e *RemoteError) Error() string { return e.Msg }

// Options tune a connection. The zero value is ready to use.
type Options struct {
	// Timeout bounds the handshake and each request; 5 s when zero.
	Timeout time.Duration
	// Name names the client in its hello.
	Name string
	// Baud is the baud rate of a real serial port; 115200 when zero.
	Baud int
	// ReadBuffer is how many bytes one read of the stream takes at most;
	// 16 KiB when zero. A program that holds thousands of connections of
	// small notifications saves memory with a few KiB.
	ReadBuffer int
	// Push, over a stream that can push what it receives (Open of a
	// stream of the radio link, whose Push method hands each message to a
	// function as it arrives), decodes the frames on the stream's own
	// goroutine: the connection starts no goroutine to read, and a frame
	// costs no hand-over between goroutines. A program that holds thousands
	// of connections over one carrier saves most of its CPU so; its
	// subscription functions and OnFrame then run where the carrier
	// delivers, and must return at once, not to hold up the other
	// streams. Other streams ignore it.
	Push bool
	// OnFrame receives the frames of kinds the line protocol does not
	// know that answer no Call, such as those a device sends of its own
	// in a protocol carried on the same frames (package link), on the
	// goroutine that reads the stream; it must not block. An error it
	// returns ends the connection, with the error as the reason.
	OnFrame func(f wire.Frame) error
}

// Envelope is a response envelope as the device sent it.
type Envelope struct {
	Response       int        `json:"response"`
	ResponseString string     `json:"responsestring"`
	Operation      string     `json:"operation"`
	URI            string     `json:"uri"`
	Content        rawContent `json:"content,omitempty"`
	QueryTimeMs    int64      `json:"querytimems"`
	QueryTimeNs    int64      `json:"querytimens"`
	Error          string     `json:"error,omitempty"`
	// Raw is the envelope's JSON as it came, with the device's field order.
	Raw []byte `json:"-"`
}

// Refusal words the envelope's status, and the device's reason when it
// gave one: "status 501: SampleRate 7 is not supported", or "status 501"
// alone, as every program of senseboard words a device's refusal.
func (e *Envelope) Refusal() string {
	if e.Error == "" {
		return "status " + strconv.Itoa(e.Response)
	}
	return "status " + strconv.Itoa(e.Response) + ": " + e.Error
}

// rawContent is JSON kept as it came: unlike json.RawMessage it points into
// the envelope's Raw bytes instead of copying them.
type rawContent []byte

// UnmarshalJSON keeps data, a part of the envelope's bytes, which the
// envelope owns.
func (r *rawContent) UnmarshalJSON(data []byte) error {
	*r = data
	return nil
}

// MarshalJSON returns the content as it came.
func (r rawContent) MarshalJSON() ([]byte, error) {
	if r == nil {
		return []byte("null"), nil
	}
	return r, nil
}

// OK reports a 2xx status.
func (e *Envelope) OK() bool { return e.Response >= 200 && e.Response < 300 }

// Notification is one notification of a subscription.
type Notification struct {
	Received time.Time
	Payload  json.RawMessage
}

// Conn is a session with a device. The errors of its calls name the port
// once, first: the device's (RemoteError), the connection's end
// (ErrClosed), an answer that does not come (ErrNoAnswer), and the
// context's that ends a call.
type Conn struct {
	port    string
	serial  string // the device asked for on a fleet's port, "" for any
	rw      io.ReadWriteCloser
	lock    *os.File // flock on a tty, held for the session
	opts    Options
	token   string
	welcome wire.WelcomeMsg
	hello   chan wire.Frame // Welcome and Refuse frames of the handshake

	writeMu  sync.Mutex
	lastSent time.Time

	// reading (read.go)
	direct bool       // requests read the stream themselves; it has read deadlines
	readMu sync.Mutex // held by whoever reads the stream
	dec    *wire.Decoder
	rbuf   []byte

	mu      sync.Mutex
	nextID  uint32
	pending map[uint32]waiter
	subs    map[uint32]*Subscription
	free    chan struct{} // closed when the reader lets go of the stream, if a request waits
	waiting bool          // a request waits on free
	bgOn    bool          // the background reader runs
	pushed  bool          // the stream pushes what it receives (Options.Push): no one reads
	err     error
	closing error // the reason CloseFor gives, from before it says bye
	done    chan struct{}
	wg      sync.WaitGroup
}

// Dial connects to the device at port: a serial port or pseudo-terminal
// path, TCP<host>:<port> (the form of this device family's PC simulator), or
// tcp://<host>:<port>. A TCP port that serves a fleet of devices (senseboard
// run --listen-fleet) takes the device's serial number after a slash:
// TCP<host>:<port>/<serial>.
func Dial(ctx context.Context, port string, opts *Options) (*Conn, error) {
	c := newConn(port, opts)
	tty := false
	switch addr, serial, isTCP := TCPAddress(port); {
	case isTCP && strings.HasSuffix(port, "/"):
		return nil, fmt.Errorf("%s: no serial number after the slash; give TCP<host>:<port>/<serial>, or no slash for a device's own port", port)
	case isTCP:
		c.serial = serial
		var d net.Dialer
		dctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
		conn, err := d.DialContext(dctx, "tcp", addr)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", port, err)
		}
		c.rw, c.direct = conn, true
	default:
		if err := c.openTTY(port); err != nil {
			return nil, err
		}
		tty = true
	}
	return c, c.start(ctx, tty)
}

// Open starts a session on a stream that is open already, such as a stream
// of the radio link; name names it in errors. The connection owns rw and
// closes it.
func Open(ctx context.Context, name string, rw io.ReadWriteCloser, opts *Options) (*Conn, error) {
	c := newConn(name, opts)
	c.rw = rw
	return c, c.start(ctx, false)
}

func newConn(port string, opts *Options) *Conn {
	c := &Conn{port: port, pending: map[uint32]waiter{}, subs: map[uint32]*Subscription{},
		done: make(chan struct{}), hello: make(chan wire.Frame, 4), token: wire.NewToken(),
		free: make(chan struct{}), dec: wire.NewDecoder(0)}
	if opts != nil {
		c.opts = *opts
	}
	if c.opts.ReadBuffer <= 0 {
		c.opts.ReadBuffer = 16384
	}
	c.rbuf = make([]byte, c.opts.ReadBuffer)
	if c.opts.Timeout <= 0 {
		c.opts.Timeout = 5 * time.Second
	}
	if c.opts.Name == "" {
		c.opts.Name = "senseboard client"
	}
	if c.opts.Baud <= 0 {
		c.opts.Baud = wire.DefaultBaud
	}
	return c
}

// start reads the stream, or has it push what it receives, and says
// hello.
func (c *Conn) start(ctx context.Context, tty bool) error {
	p, push := c.rw.(pusher)
	push = push && c.opts.Push && !c.direct
	c.mu.Lock()
	c.pushed = push
	c.startBackground()
	c.mu.Unlock()
	if push {
		p.Push(c.feed, c.ended)
	}
	if err := c.handshake(ctx, tty); err != nil {
		c.shut(err)
		c.wg.Wait()
		return err
	}
	c.wg.Add(1)
	go c.keepalive()
	return nil
}

// TCPAddress recognizes the TCP port forms, TCP<host>:<port> and
// tcp://<host>:<port>, each with an optional /<serial> that names a device
// of a fleet's port, and returns the address and the serial number.
func TCPAddress(port string) (addr, serial string, ok bool) {
	a, ok := strings.CutPrefix(port, "tcp://")
	if !ok {
		if a, ok = strings.CutPrefix(port, "TCP"); !ok || !strings.Contains(a, ":") {
			return "", "", false
		}
	}
	if i := strings.LastIndexByte(a, '/'); i >= 0 {
		a, serial = a[:i], a[i+1:]
	}
	return a, serial, true
}

func (c *Conn) openTTY(port string) error {
	path, err := filepath.EvalSymlinks(port)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: no such port (give a serial port path, TCP<host>:<port> or tcp://<host>:<port>)", port)
		}
		return fmt.Errorf("%s: %w", port, err)
	}
	lock, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("%s: %w: another session has it open", port, ErrBusy)
		}
		return fmt.Errorf("%s: %w", port, err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return fmt.Errorf("%s: %w: another session holds it", port, ErrBusy)
	}
	p, err := bugserial.Open(path, &bugserial.Mode{BaudRate: c.opts.Baud})
	if err != nil {
		lock.Close()
		var pe *bugserial.PortError
		if errors.As(err, &pe) && pe.Code() == bugserial.PortBusy {
			return fmt.Errorf("%s: %w: another session has it open", port, ErrBusy)
		}
		return fmt.Errorf("%s: %w", port, err)
	}
	// What waits in the terminal was written to an earlier session; a frame
	// it cut short would swallow this session's welcome. A port that
	// cannot drop it still works, later, as the decoder gets past it.
	p.ResetInputBuffer()
	c.rw, c.lock, c.direct = &ttyPort{Port: p}, lock, true
	return nil
}

// ttyPort adapts a serial port: reads wait for data, and honour a read
// deadline as net.Conn's do (checked every ttyPoll).
type ttyPort struct {
	bugserial.Port
	deadline atomic.Int64 // unix nanoseconds; 0 for none
}

// ttyPoll is how often a blocked read looks at its deadline.
const ttyPoll = 50 * time.Millisecond

// SetReadDeadline makes reads fail with os.ErrDeadlineExceeded after t.
func (t *ttyPort) SetReadDeadline(d time.Time) error {
	if d.IsZero() {
		t.deadline.Store(0)
	} else {
		t.deadline.Store(d.UnixNano())
	}
	return nil
}

func (t *ttyPort) Read(b []byte) (int, error) {
	for {
		wait := ttyPoll
		if dl := t.deadline.Load(); dl != 0 {
			rem := time.Until(time.Unix(0, dl))
			if rem <= 0 {
				return 0, os.ErrDeadlineExceeded
			}
			wait = min(wait, rem)
		}
		t.Port.SetReadTimeout(wait)
		n, err := t.Port.Read(b)
		if n > 0 || err != nil {
			return n, err
		}
	}
}

// handshake says hello and waits for the welcome. On a tty a refusal for a
// busy line (wire.RefuseBusy) is retried for a second: a killed client's
// session takes a moment to end.
func (c *Conn) handshake(ctx context.Context, tty bool) error {
	deadline := time.Now().Add(c.opts.Timeout)
	busyUntil := time.Now().Add(time.Second)
	for {
		msg := wire.HelloMsg{Protocol: wire.Version, Client: c.opts.Name, Session: c.token, Serial: c.serial}
		b, _ := wire.AppendJSONFrame(nil, wire.Hello, 0, &struct {
			wire.HelloMsg
			Lock bool `json:"lock,omitempty"`
		}{msg, tty})
		if err := c.write(b); err != nil {
			return fmt.Errorf("%s: %w", c.port, err)
		}
		f, err := c.await(ctx, c.hello, deadline)
		switch {
		case errors.Is(err, errTimeout):
			return fmt.Errorf("%s: %w within %v (is it running, or off in FullPowerOff?)", c.port, ErrNoAnswer, c.opts.Timeout)
		case err != nil:
			return err
		case f.Kind == wire.Welcome:
			json.Unmarshal(f.Payload, &c.welcome)
			if c.welcome.Protocol != wire.Version {
				return fmt.Errorf("%s: the device speaks protocol version %d; this client speaks %d", c.port, c.welcome.Protocol, wire.Version)
			}
			if c.serial != "" && c.welcome.Serial != c.serial {
				// a device that predates fleets ignores the serial asked for
				return fmt.Errorf("%s: %w: the port serves device %s, not %s", c.port, ErrRefused, c.welcome.Serial, c.serial)
			}
			return nil
		}
		var r wire.RefuseMsg
		json.Unmarshal(f.Payload, &r)
		if tty && r.Code == wire.RefuseBusy && time.Now().Before(busyUntil) {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return fmt.Errorf("%s: %w: %s", c.port, ErrRefused, r.Error)
	}
}

// Welcome returns what the device said of itself.
func (c *Conn) Welcome() wire.WelcomeMsg { return c.welcome }

func (c *Conn) write(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.lastSent = time.Now()
	_, err := c.rw.Write(b)
	return err
}

func (c *Conn) dispatch(f wire.Frame) {
	switch f.Kind {
	case wire.Welcome, wire.Refuse:
		var m struct{ Session string }
		json.Unmarshal(f.Payload, &m)
		if m.Session == c.token {
			f.Payload = append([]byte(nil), f.Payload...)
			select {
			case c.hello <- f:
			default:
			}
		}
	case wire.Response, wire.Pong, wire.Error:
		c.answer(f)
		if f.Kind == wire.Error {
			// whether a call waits for it or not (a ping's answer may come
			// after the ping gave up, behind a backlog)
			var m wire.ErrorMsg
			if json.Unmarshal(f.Payload, &m) == nil && m.Code == wire.CodeNoSession {
				c.shut(noSession(m))
			}
		}
	case wire.Notification:
		c.mu.Lock()
		s := c.subs[f.ID]
		c.mu.Unlock()
		switch {
		case s != nil && s.fn != nil:
			s.fn(f.Payload, time.Now())
		case s != nil:
			s.in.Deliver(Notification{Received: time.Now(), Payload: append(json.RawMessage(nil), f.Payload...)})
		}
	case wire.Ended:
		c.mu.Lock()
		s := c.subs[f.ID]
		delete(c.subs, f.ID)
		c.mu.Unlock()
		if s != nil {
			var m wire.EndedMsg
			json.Unmarshal(f.Payload, &m)
			s.in.Finish(fmt.Errorf("%w: %s", ErrEnded, m.Reason))
		}
	default:
		if c.answer(f) || c.opts.OnFrame == nil {
			return
		}
		f.Payload = append([]byte(nil), f.Payload...)
		if err := c.opts.OnFrame(f); err != nil {
			c.shut(err)
		}
	}
}

// waiter is a request that waits for its answer: a frame with its id of
// the kind a Call names, or else a Response or a Pong; an Error answers
// any request.
type waiter struct {
	ch   chan wire.Frame
	kind wire.Kind // of the answer to a Call; 0 for a Response or a Pong
}

// answers reports whether a frame of kind k answers the request.
func (w waiter) answers(k wire.Kind) bool {
	if w.kind != 0 {
		return k == w.kind || k == wire.Error
	}
	return k == wire.Response || k == wire.Pong || k == wire.Error
}

// answer hands f to the request it answers, if one waits, and reports
// whether one did.
func (c *Conn) answer(f wire.Frame) bool {
	c.mu.Lock()
	w, ok := c.pending[f.ID]
	ok = ok && w.answers(f.Kind)
	if ok {
		delete(c.pending, f.ID)
	}
	c.mu.Unlock()
	if ok {
		f.Payload = append([]byte(nil), f.Payload...)
		w.ch <- f
	}
	return ok
}

// keepalive pings while the session is idle, so that a line's session
// stays alive: PingInterval after the last frame sent or the last pong.
// Each ping waits for its pong (reading the stream, so nothing piles up
// unread) until the next ping is due, no longer: a pong may wait behind
// everything the device sent before it, for longer than the device waits
// to hear from the client (wire.SessionTimeout), and a keepalive that
// waited for it would leave the device to hear nothing. A pong that comes
// later is read and dropped. keepalive wakes only when a ping may be due,
// since a program may hold thousands of connections. It exits when the
// connection closes.
func (c *Conn) keepalive() {
	defer c.wg.Done()
	t := time.NewTimer(wire.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			wait := c.untilPing()
			if wait <= 0 {
				_, err := c.call(context.Background(), wire.Ping, nil, 0, nil, wire.PingInterval)
				wait = wire.PingInterval // after the pong
				if err != nil {
					wait = c.untilPing() // after the ping: now
				}
			}
			t.Reset(max(wait, 0))
		}
	}
}

// untilPing returns how long until a keepalive ping is due: PingInterval
// after the last frame sent.
func (c *Conn) untilPing() time.Duration {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return time.Until(c.lastSent.Add(wire.PingInterval))
}

// shut closes the connection with a reason; it is safe to call more than once.
func (c *Conn) shut(reason error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	if c.closing != nil {
		reason = c.closing // the device's answer to the bye ends the stream too
	}
	c.err = reason
	subs := c.subs
	c.subs = map[uint32]*Subscription{}
	c.mu.Unlock()
	close(c.done)
	c.rw.Close()
	if c.lock != nil {
		c.lock.Close()
	}
	for _, s := range subs {
		s.in.Close(reason)
	}
}

// Err returns why the connection closed, or nil while it is open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Done is closed when the connection closes.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Close ends the session (with a bye) and the connection.
func (c *Conn) Close() error { return c.CloseFor(ErrClosed) }

// CloseFor ends the session (with a bye) and the connection, with why as
// the reason that Err and the subscriptions give, unless the connection
// had already ended for another.
func (c *Conn) CloseFor(why error) error {
	c.mu.Lock()
	if c.closing == nil {
		c.closing = why
	}
	c.mu.Unlock()
	c.write(wire.AppendFrame(nil, wire.Bye, 0, nil))
	c.shut(why)
	c.wg.Wait()
	return nil
}

// Call sends a frame of a protocol carried on the line protocol's frames,
// such as the radio link (package link), with an encoded payload, and
// returns the frame of kind answer with its id that answers it. The
// device's Error frame is a *RemoteError.
func (c *Conn) Call(ctx context.Context, kind wire.Kind, payload []byte, answer wire.Kind) (wire.Frame, error) {
	return c.call(ctx, kind, encoded(payload), answer, nil, c.opts.Timeout)
}

// encoded is a frame's payload encoded already.
type encoded []byte

// Send sends a frame that no answer is awaited for, with an id of 0.
func (c *Conn) Send(kind wire.Kind, payload []byte) error {
	if err := c.write(wire.AppendFrame(nil, kind, 0, payload)); err != nil {
		return fmt.Errorf("%s: %w", c.port, err)
	}
	return nil
}

// roundTrip sends a frame with a JSON payload (none when nil) and waits
// for the answer with the same id.
func (c *Conn) roundTrip(ctx context.Context, kind wire.Kind, payload any, before func(id uint32)) (wire.Frame, error) {
	return c.call(ctx, kind, payload, 0, before, c.opts.Timeout)
}

// call sends a frame and waits for the answer with the same id, for
// timeout at most: a frame of kind answer, or of the line protocol's when
// it is 0. The payload is encoded, or a value to encode as JSON, or none
// when nil.
func (c *Conn) call(ctx context.Context, kind wire.Kind, payload any, answer wire.Kind, before func(id uint32), timeout time.Duration) (wire.Frame, error) {
	if err := ctx.Err(); err != nil { // as net/http: a request whose context has ended is not sent
		return wire.Frame{}, fmt.Errorf("%s: %w", c.port, err)
	}
	c.mu.Lock()
	if err := c.err; err != nil {
		c.mu.Unlock()
		return wire.Frame{}, fmt.Errorf("%s: %w", c.port, err)
	}
	c.nextID++
	id := c.nextID
	ch := make(chan wire.Frame, 1)
	c.pending[id] = waiter{ch, answer}
	if before != nil {
		before(id)
	}
	c.mu.Unlock()
	var b []byte
	var err error
	switch p := payload.(type) {
	case nil:
		b = wire.AppendFrame(nil, kind, id, nil)
	case encoded:
		b = wire.AppendFrame(nil, kind, id, p)
	default:
		if b, err = wire.AppendJSONFrame(nil, kind, id, payload); err != nil {
			c.forget(id)
			return wire.Frame{}, err
		}
	}
	if err := c.write(b); err != nil {
		c.forget(id)
		return wire.Frame{}, fmt.Errorf("%s: %w", c.port, err)
	}
	f, err := c.await(ctx, ch, time.Now().Add(timeout))
	switch {
	case errors.Is(err, errTimeout):
		c.forget(id)
		return wire.Frame{}, fmt.Errorf("%s: %w within %v (is it off in FullPowerOff?)", c.port, ErrNoAnswer, timeout)
	case err != nil:
		c.forget(id)
		return wire.Frame{}, err
	case f.Kind == wire.Error:
		var m wire.ErrorMsg
		json.Unmarshal(f.Payload, &m)
		if m.Code == wire.CodeNoSession {
			// dispatch shuts the connection too, after it handed over the
			// answer: shut it here, so that it is closed when the call returns
			err := noSession(m)
			c.shut(err)
			return f, fmt.Errorf("%s: %w", c.port, err)
		}
		return f, fmt.Errorf("%s: protocol error: %w", c.port, &RemoteError{m.Error})
	}
	return f, nil
}

func (c *Conn) forget(id uint32) {
	c.mu.Lock()
	delete(c.pending, id)
	delete(c.subs, id)
	c.mu.Unlock()
}

// Ping measures a round trip of the line. A device that holds its writes
// apart (senseboard's write interval) answers the ping of a connection
// that subscribes with its next write of notifications: the round trip
// then includes up to that interval; a connection without subscriptions
// is answered at once.
func (c *Conn) Ping(ctx context.Context) error {
	_, err := c.roundTrip(ctx, wire.Ping, nil, nil)
	return err
}

// checkPath refuses a path that JSON would carry with its bytes replaced:
// one that is not UTF-8.
func checkPath(path string) error {
	if !utf8.ValidString(path) {
		return fmt.Errorf("path %q is not valid UTF-8; a path is UTF-8 text", path)
	}
	return nil
}

func request(op resource.Op, path string, params []resource.Value) *wire.RequestMsg {
	m := &wire.RequestMsg{Op: op.String(), Path: path}
	for _, p := range params {
		m.Params = append(m.Params, wire.EncodeParam(p))
	}
	return m
}

// Do makes a request and returns the device's envelope. An envelope with an
// error status is not an error of Do.
func (c *Conn) Do(ctx context.Context, op resource.Op, path string, params ...resource.Value) (*Envelope, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	f, err := c.roundTrip(ctx, wire.Request, request(op, path, params), nil)
	if err != nil {
		return nil, err
	}
	return decodeEnvelope(f)
}

// Subscription is a subscription made over the connection.
type Subscription struct {
	c      *Conn
	id     uint32
	path   string
	params []resource.Value
	in     *inbox.Inbox[Notification]
	fn     func(payload []byte, received time.Time) // instead of in, when set
}

// SubscriptionBuffer is how many notifications wait for the reader of C;
// the memory for them is taken as they pile up and let go as the reader
// catches up.
const SubscriptionBuffer = 4096

// Subscribe subscribes to the resource at path. The subscription is made
// when the envelope says 2xx; otherwise the returned subscription is nil.
func (c *Conn) Subscribe(ctx context.Context, path string, params ...resource.Value) (*Subscription, *Envelope, error) {
	return c.subscribe(ctx, path, nil, params)
}

// SubscribeFunc subscribes as Subscribe does, but hands each notification
// to fn instead of C, on the goroutine that reads the connection, with the
// time it was read: no copy, no queue and no goroutine per subscription,
// for programs that hold thousands. fn must not call the connection, and
// payload is valid only until it returns. While fn runs nothing else of
// the connection is read: it should return quickly, or block on purpose
// to hold the device back (wbcmd waits for its printing so), as long as
// nothing waits for an answer of the connection meanwhile. C never
// delivers, and Err says why the subscription ended once it has.
func (c *Conn) SubscribeFunc(ctx context.Context, path string, fn func(payload []byte, received time.Time), params ...resource.Value) (*Subscription, *Envelope, error) {
	return c.subscribe(ctx, path, fn, params)
}

func (c *Conn) subscribe(ctx context.Context, path string, fn func([]byte, time.Time), params []resource.Value) (*Subscription, *Envelope, error) {
	if err := checkPath(path); err != nil {
		return nil, nil, err
	}
	s := &Subscription{c: c, path: path, params: params, in: inbox.New[Notification](SubscriptionBuffer), fn: fn}
	f, err := c.roundTrip(ctx, wire.Request, request(resource.Subscribe, path, params), func(id uint32) {
		s.id = id
		c.subs[id] = s // before the first notification can come
		c.startBackground()
	})
	if err != nil {
		return nil, nil, err
	}
	env, err := decodeEnvelope(f)
	if err != nil || !env.OK() {
		c.forget(s.id)
		return nil, env, err
	}
	return s, env, nil
}

// C returns the notifications; it is closed when the subscription ends.
// When the device ends it, the notifications that waited come first; when
// the connection closes or Unsubscribe is called, those are let go.
func (s *Subscription) C() <-chan Notification { return s.in.C() }

// Err says why the subscription ended, or nil while it lasts or after
// Unsubscribe; it wraps ErrEnded when the device ended it.
func (s *Subscription) Err() error { return s.in.Err() }

// Dropped counts notifications lost because C was not read fast enough.
func (s *Subscription) Dropped() uint64 { return s.in.Dropped() }

// Unsubscribe ends the subscription and returns the device's envelope.
func (s *Subscription) Unsubscribe(ctx context.Context) (*Envelope, error) {
	c := s.c
	c.mu.Lock()
	delete(c.subs, s.id)
	c.mu.Unlock()
	s.in.Close(nil)
	f, err := c.roundTrip(ctx, wire.Request, request(resource.Unsubscribe, s.path, s.params), nil)
	if err != nil {
		return nil, err
	}
	return decodeEnvelope(f)
}

// ListPorts returns the serial ports of this computer.
func ListPorts() ([]string, error) { return bugserial.GetPortsList() }
