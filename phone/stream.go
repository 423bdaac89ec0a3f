package phone

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"senseboard/client"
	"senseboard/link"
	"senseboard/resource"
)

// Event is a notification of a subscription, or its end.
type Event struct {
	// Ended is set when the subscription ended without being asked to;
	// Reason says why.
	Ended    bool
	Reason   string
	Device   string // serial number
	URI      string // the resource, /net/<serial>/<path>
	Content  json.RawMessage
	Received time.Time
}

// Sink receives a subscriber's events. It is called from the goroutine of
// the device's stream and must not block.
type Sink func(Event)

// stream is the phone's one subscription to a resource of a device,
// shared by every client that subscribes to it.
//
// A stream is in d.streams from the moment a client starts it until it
// has left the device, so that one subscription per resource is made or
// ended at a time, without a lock held across the round trip: a client
// that finds a stream being made (ready open) or ended (ending set) waits
// for that and looks again.
type stream struct {
	d     *peer
	key   string
	ready chan struct{} // closed when the subscription is made, or refused
	gone  chan struct{} // closed when an ending stream has left the device

	// guarded by d.mu
	uri    string
	sub    *client.Subscription // nil until made
	live   bool                 // made, and not ending
	ending bool                 // being unsubscribed

	mu   sync.Mutex // guards subs; held while events are delivered
	subs map[*Sub]struct{}
}

// Sub is one client's subscription.
type Sub struct {
	st   *stream
	sink Sink
}

// URI returns the subscribed resource, /net/<serial>/<path>.
func (s *Sub) URI() string { return s.st.uri }

// Device returns the serial number of the subscribed device.
func (s *Sub) Device() string { return s.st.d.serial }

// streamKey names a resource of a device, with the values of its
// subscription, whatever the path's case and slashes, as the device does.
func streamKey(path string, params []resource.Value) string {
	b := []byte(strings.ToLower(strings.Trim(path, "/")))
	for _, v := range params {
		b = append(b, 0)
		b = v.AppendJSON(b)
	}
	return string(b)
}

// Subscribe subscribes to the resource at path with the values params,
// or joins the phone's subscription to it: events go to sink. When the
// device refuses, the envelope says why and the Sub is nil.
func (u *Use) Subscribe(ctx context.Context, path string, params []resource.Value, sink Sink) (*Sub, *client.Envelope, error) {
	s, env, created, err := u.d.subscribe(ctx, u.c, path, params, sink)
	if created {
		u.d.publish()
	}
	return s, env, err
}

// subscribe joins the stream of a resource or starts it; created says it
// started one. No lock is held across the round trip to the device.
func (d *peer) subscribe(ctx context.Context, c *link.Conn, path string, params []resource.Value, sink Sink) (*Sub, *client.Envelope, bool, error) {
	key := streamKey(path, params)
	for {
		d.mu.Lock()
		st := d.streams[key]
		if st == nil {
			st = &stream{d: d, key: key, ready: make(chan struct{}), gone: make(chan struct{}), subs: map[*Sub]struct{}{}}
			d.streams[key] = st
			d.mu.Unlock()
			return d.start(ctx, c, st, path, params, sink)
		}
		if st.live {
			s := st.add(sink)
			uri := st.uri
			d.mu.Unlock()
			return s, localEnvelope(resource.Subscribe, uri), false, nil
		}
		wait := st.ready
		if st.ending {
			wait = st.gone
		}
		d.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, nil, false, ctx.Err()
		}
	}
}

// start makes the subscription of a stream that subscribe put in
// d.streams, and takes it out again when the device refuses.
func (d *peer) start(ctx context.Context, c *link.Conn, st *stream, path string, params []resource.Value, sink Sink) (*Sub, *client.Envelope, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, d.ph.cfg.Timeout)
	defer cancel()
	sub, env, err := c.Subscribe(ctx, path, params...)
	defer close(st.ready)
	if err != nil || sub == nil {
		d.forgetStream(st)
		if err != nil {
			return nil, nil, false, d.error(err)
		}
		return nil, env, false, nil
	}
	d.mu.Lock()
	st.uri, st.sub, st.live = env.URI, sub, true
	s := st.add(sink)
	d.mu.Unlock()
	if !d.ph.goTracked(st.pump) {
		// Close ends the link, and with it this subscription.
		d.forgetStream(st)
		return nil, nil, false, ErrClosed
	}
	return s, env, true, nil
}

// forgetStream takes a stream out of d.streams.
func (d *peer) forgetStream(st *stream) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.streams[st.key] == st {
		delete(d.streams, st.key)
		d.lastUse = time.Now() // the idle time of a device starts with its last stream's end
	}
}

func (st *stream) add(sink Sink) *Sub {
	s := &Sub{st: st, sink: sink}
	st.mu.Lock()
	st.subs[s] = struct{}{}
	st.mu.Unlock()
	return s
}

// pump hands the device's notifications to the subscribers. It exits when
// the subscription ends: when the last subscriber leaves, or when the
// device or the connection ends it, which the subscribers then hear of.
func (st *stream) pump() {
	d := st.d
	for n := range st.sub.C() {
		st.deliver(Event{Device: d.serial, URI: st.uri, Content: n.Payload, Received: n.Received})
	}
	d.mu.Lock()
	if d.streams[st.key] == st && !st.ending {
		delete(d.streams, st.key)
	}
	st.live = false
	d.mu.Unlock()
	if err := st.sub.Err(); err != nil {
		st.deliver(Event{Ended: true, Reason: linkError(err), Device: d.serial, URI: st.uri, Received: time.Now()})
	}
	d.publish()
}

func (st *stream) deliver(e Event) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for s := range st.subs {
		s.sink(e)
	}
}

// ErrEnded is the end of a subscription that had ended already.
var ErrEnded = errors.New("the subscription ended already")

// Unsubscribe ends the client's subscription; the phone's subscription on
// the device ends with its last subscriber.
func (s *Sub) Unsubscribe(ctx context.Context) (*client.Envelope, error) {
	a, ended, err := s.unsubscribe(ctx)
	if ended {
		s.st.d.publish()
	}
	return a, err
}

// unsubscribe leaves the stream; ended says the stream ended with it. No
// lock is held across the round trip to the device.
func (s *Sub) unsubscribe(ctx context.Context) (*client.Envelope, bool, error) {
	st := s.st
	d := st.d
	d.mu.Lock()
	st.mu.Lock()
	_, was := st.subs[s]
	delete(st.subs, s)
	left := len(st.subs)
	st.mu.Unlock()
	if !was {
		d.mu.Unlock()
		return nil, false, ErrEnded
	}
	if left > 0 || !st.live {
		d.mu.Unlock()
		return localEnvelope(resource.Unsubscribe, st.uri), false, nil
	}
	st.live, st.ending = false, true
	d.mu.Unlock()
	defer func() {
		d.forgetStream(st)
		close(st.gone)
	}()
	ctx, cancel := context.WithTimeout(ctx, d.ph.cfg.Timeout)
	defer cancel()
	env, err := st.sub.Unsubscribe(ctx)
	if err != nil {
		return nil, true, d.error(err)
	}
	return env, true, nil
}

// localEnvelope is an answer of the phone in the envelope's form, for a
// subscription it shares with other clients.
func localEnvelope(op resource.Op, uri string) *client.Envelope {
	e := resource.Envelope{Status: resource.StatusOK, Op: op, URI: uri}
	raw, _ := e.AppendJSON(nil)
	env := &client.Envelope{}
	json.Unmarshal(raw, env)
	env.Raw = raw
	return env
}
