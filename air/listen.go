package air

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// acceptQueue bounds the streams a device has taken and not yet accepted.
const acceptQueue = 64

// ErrOnAir is a device that another program serves on the air already.
var ErrOnAir = errors.New("is on the air already")

// Listener is a device on the air: it advertises the device and takes
// the streams centrals open to it. It is a net.Listener, for
// link.Peripheral.Serve.
type Listener struct {
	l      *Link
	serial string
	sub    *nats.Subscription

	mu     sync.Mutex
	queue  chan *Stream   // streams for Accept; made when first needed (a device whose streams are handled has none)
	scan   func() []byte  // what a scan sees, for the adverts; nil for nothing
	last   []byte         // the scan of the latest advert
	advert []byte         // the latest advert, sent again while the scan stays
	handle func(net.Conn) // set by Handle
	left   bool           // off the air: no more streams
	why    string         // why it left
	closed bool           // Close was called
	done   chan struct{}  // closed by Close
}

// Listen puts the device with a serial number on the air. A device that
// another program serves already is refused with ErrOnAir. The device
// advertises every interval until the listener closes.
func (l *Link) Listen(serial string) (*Listener, error) {
	if err := CheckSerial(serial); err != nil {
		return nil, fmt.Errorf("air: %w", err)
	}
	// Is someone serving it? No responders answers at once; a program
	// that serves it answers the probe.
	probe, _ := json.Marshal(dialMsg{Probe: true})
	msg, err := l.nc.Request(DialSubject(serial), probe, 2*time.Second)
	switch {
	case err == nil:
		var rep dialReply
		json.Unmarshal(msg.Data, &rep)
		return nil, fmt.Errorf("air: device %s %w, served by another program (%s) on the NATS network at %s", serial, ErrOnAir, rep.Program, l.url)
	case errors.Is(err, nats.ErrTimeout):
		return nil, fmt.Errorf("air: device %s %w: a program takes its streams but does not answer", serial, ErrOnAir)
	case !errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("air: device %s: %w", serial, l.unreachable(err))
	}
	ln := &Listener{l: l, serial: serial, done: make(chan struct{})}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, fmt.Errorf("air: %w", ErrClosed)
	}
	if l.listeners[serial] != nil {
		l.mu.Unlock()
		return nil, fmt.Errorf("air: device %s %w, served by this program", serial, ErrOnAir)
	}
	l.listeners[serial] = ln
	l.mu.Unlock()
	if ln.sub, err = l.nc.ChanSubscribe(DialSubject(serial), l.dials); err != nil {
		l.mu.Lock()
		delete(l.listeners, serial)
		l.mu.Unlock()
		return nil, fmt.Errorf("air: device %s: %w", serial, err)
	}
	l.flush() // the server knows the device before anyone hears of it
	ln.advertise("")
	return ln, nil
}

// SetScan has the device's adverts carry what a scan of it sees: scan
// returns it, a JSON object of the radio link (package link's Advert
// frame), each time the device advertises. A central then reads it from
// the adverts, without a stream. The device advertises at once.
func (ln *Listener) SetScan(scan func() []byte) {
	ln.mu.Lock()
	ln.scan = scan
	left := ln.left
	ln.mu.Unlock()
	if !left {
		ln.advertise("")
	}
}

// advertise publishes the device's advert, or its goodbye with why. An
// advert whose scan has not changed is the one sent last: a fleet's
// devices advertise every second.
func (ln *Listener) advertise(gone string) {
	a := Advert{Serial: ln.serial, Program: ln.l.id, Every: ln.l.opts.Interval.Milliseconds(), Gone: gone}
	nc, _ := ln.l.advertConn(false)
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if gone == "" && ln.scan != nil {
		if b := ln.scan(); len(b) > 0 && b[0] == '{' {
			a.Scan = b
		}
	}
	b := ln.advert
	if gone != "" || b == nil || !bytes.Equal(a.Scan, ln.last) {
		b, _ = json.Marshal(a) // a scan that is not JSON fails here, and goes
		if b == nil {
			a.Scan = nil
			b, _ = json.Marshal(a)
		}
		if gone == "" {
			ln.last, ln.advert = a.Scan, b
		}
	}
	nc.Publish(AdvertSubject(ln.serial), b)
}

// dial answers a central that opens a stream, or probes.
func (ln *Listener) dial(msg *nats.Msg) {
	var m dialMsg
	answer := func(r dialReply) {
		r.Program = ln.l.id
		b, _ := json.Marshal(r)
		msg.Respond(b)
	}
	if err := json.Unmarshal(msg.Data, &m); err != nil {
		answer(dialReply{Error: "malformed dial: " + err.Error()})
		return
	}
	if m.Probe {
		answer(dialReply{})
		return
	}
	if !token(m.Program) || m.Stream == 0 || m.Every < 1 || m.Every > maxEvery.Milliseconds() {
		answer(dialReply{Error: fmt.Sprintf("malformed dial: program %q (1 to 64 letters, digits, '-' or '_'), stream %d (1 or more), every %d ms (1 ms to 1 h)", m.Program, m.Stream, m.Every)})
		return
	}
	s := newStream(ln.l, ln.serial, true, time.Duration(m.Every)*time.Millisecond)
	s.ln = ln
	s.connect(m.Program, m.Stream)
	if err := ln.l.add(s); err != nil {
		answer(dialReply{Error: "the device's program is stopping"})
		return
	}
	ln.mu.Lock()
	if ln.left {
		ln.mu.Unlock()
		s.Close()
		answer(dialReply{Error: "the device is off the air"})
		return
	}
	if h := ln.handle; h != nil {
		ln.mu.Unlock()
		h(s)
		answer(dialReply{Stream: s.id, Every: ln.l.opts.Interval.Milliseconds(), Host: hostName, PID: os.Getpid()})
		return
	}
	select {
	case ln.queueLocked() <- s:
	default:
		ln.mu.Unlock()
		s.Close()
		answer(dialReply{Error: fmt.Sprintf("the device's program is busy: %d streams wait to be served", acceptQueue)})
		return
	}
	ln.mu.Unlock()
	answer(dialReply{Stream: s.id, Every: ln.l.opts.Interval.Milliseconds(), Host: hostName, PID: os.Getpid()})
}

// hostName is the computer's name, for the centrals of its devices.
var hostName, _ = os.Hostname()

// queueLocked returns the queue of streams for Accept, made at its first
// use; ln.mu is held.
func (ln *Listener) queueLocked() chan *Stream {
	if ln.queue == nil {
		ln.queue = make(chan *Stream, acceptQueue)
	}
	return ln.queue
}

// Accept waits for the next stream a central opens.
func (ln *Listener) Accept() (net.Conn, error) {
	ln.mu.Lock()
	queue := ln.queueLocked()
	ln.mu.Unlock()
	select {
	case s := <-queue:
		return s, nil
	case <-ln.done:
		return nil, net.ErrClosed
	}
}

// Handle hands each stream a central opens from now on to f instead of
// to Accept, and the streams that wait for Accept too: a program of many
// devices then needs no goroutine per device that waits in Accept. f runs
// on the link's goroutine and must not block: it serves the stream on a
// goroutine of its caller's, or closes it.
func (ln *Listener) Handle(f func(net.Conn)) {
	ln.mu.Lock()
	ln.handle = f
	queue := ln.queue
	ln.mu.Unlock()
	for {
		select {
		case s := <-queue:
			f(s)
		default:
			return
		}
	}
}

// Close takes the device off the air (Leave), and ends Accept.
func (ln *Listener) Close() error {
	ln.Leave("it left the air")
	ln.mu.Lock()
	if !ln.closed {
		ln.closed = true
		close(ln.done)
	}
	queue := ln.queue
	ln.mu.Unlock()
	for {
		select {
		case s := <-queue:
			s.Close()
		default:
			return nil
		}
	}
}

// Leave takes the device off the air: its advert says goodbye with why,
// and it takes no more streams. Streams accepted before go on; Accept
// waits for Close.
func (ln *Listener) Leave(why string) {
	ln.mu.Lock()
	if ln.left {
		ln.mu.Unlock()
		return
	}
	ln.left, ln.why = true, why
	ln.mu.Unlock()
	ln.sub.Unsubscribe()
	ln.l.flush() // the server forgets the device before anyone hears it left
	ln.l.mu.Lock()
	if ln.l.listeners[ln.serial] == ln {
		delete(ln.l.listeners, ln.serial)
	}
	ln.l.mu.Unlock()
	ln.advertise(why)
}

// Addr is the device's dial subject.
func (ln *Listener) Addr() net.Addr { return addr(DialSubject(ln.serial)) }

// leftWhy says why the device left the air, "" while it is on it.
func (ln *Listener) leftWhy() string {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	return ln.why
}
