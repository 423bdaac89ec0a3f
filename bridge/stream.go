package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"senseboard/client"
	"senseboard/resource"
)

// Event is a notification of a subscription, or its end.
type Event struct {
	// Ended is set when the subscription ended without being asked to;
	// Reason says why.
	Ended    bool
	Reason   string
	ID       ID     // the subscriber's id
	Device   string // serial number
	URI      string // the resource, /net/<serial>/<path>
	Content  json.RawMessage
	Received time.Time
}

// Sink receives a subscriber's events. It is called from the goroutine of
// the device's stream and must not block.
type Sink func(Event)

// stream is the bridge's one subscription to a resource of a device,
// shared by every client that subscribes to it.
type stream struct {
	d   *device
	key string
	uri string
	sub *client.Subscription

	mu   sync.Mutex
	subs map[*Sub]struct{}
}

// Sub is one client's subscription.
type Sub struct {
	st   *stream
	id   ID
	sink Sink
}

// URI returns the subscribed resource, /net/<serial>/<path>.
func (s *Sub) URI() string { return s.st.uri }

// Device returns the serial number of the subscribed device.
func (s *Sub) Device() string { return s.st.d.serial }

// streamKey names a resource of a device whatever the path's case and
// slashes, as the device does.
func streamKey(path string, value json.RawMessage) string {
	return strings.ToLower(strings.Trim(path, "/")) + "\x00" + string(value)
}

// Subscribe carries out a subscribe message: events go to sink, tagged
// with the message's id. When the device refuses, the answer says why and
// the Sub is nil.
func (b *Bridge) Subscribe(ctx context.Context, m Message, sink Sink) (*Sub, *Answer, error) {
	if op, err := m.op(); err != nil {
		return nil, nil, err
	} else if op != resource.Subscribe {
		return nil, nil, fmt.Errorf("%w: Subscribe with a %s message", ErrBadMessage, m.Type)
	}
	d, path, err := b.route(&m)
	if err != nil {
		return nil, nil, err
	}
	params, err := m.params(resource.Subscribe, path)
	if err != nil {
		return nil, nil, err
	}
	c, err := d.conn()
	if err != nil {
		return nil, nil, err
	}
	s, a, created, err := d.subscribe(ctx, c, path, params, m, sink)
	if created {
		d.publish()
	}
	return s, a, err
}

// subscribe joins the stream of a resource or starts it; created says it
// started one.
func (d *device) subscribe(ctx context.Context, c *client.Conn, path string, params []resource.Value, m Message, sink Sink) (*Sub, *Answer, bool, error) {
	key := streamKey(path, m.Value)
	d.subMu.Lock()
	defer d.subMu.Unlock()
	if st := d.streams[key]; st != nil {
		s := st.add(m.ID, sink)
		return s, &Answer{Device: d.serial, Envelope: localEnvelope(resource.Subscribe, st.uri)}, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.b.cfg.Timeout)
	defer cancel()
	sub, env, err := c.Subscribe(ctx, path, params...)
	if err != nil {
		return nil, nil, false, deviceError(d, err)
	}
	a := &Answer{Device: d.serial, Envelope: env}
	if sub == nil {
		return nil, a, false, nil
	}
	st := &stream{d: d, key: key, uri: env.URI, sub: sub, subs: map[*Sub]struct{}{}}
	s := st.add(m.ID, sink)
	if !d.b.goTracked(st.pump) {
		// Close ends the link, and with it this subscription.
		return nil, nil, false, ErrClosed
	}
	d.streams[key] = st
	return s, a, true, nil
}

func (st *stream) add(id ID, sink Sink) *Sub {
	s := &Sub{st: st, id: id, sink: sink}
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
	d.subMu.Lock()
	if d.streams[st.key] == st {
		delete(d.streams, st.key)
	}
	d.subMu.Unlock()
	if err := st.sub.Err(); err != nil {
		reason := strings.TrimPrefix(err.Error(), "device "+d.serial+": ")
		st.deliver(Event{Ended: true, Reason: reason, Device: d.serial, URI: st.uri, Received: time.Now()})
	}
	d.publish()
}

func (st *stream) deliver(e Event) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for s := range st.subs {
		e.ID = s.id
		s.sink(e)
	}
}

// Unsubscribe ends the client's subscription; the bridge's subscription on
// the device ends with its last subscriber.
func (s *Sub) Unsubscribe(ctx context.Context) (*Answer, error) {
	a, ended, err := s.unsubscribe(ctx)
	if ended {
		s.st.d.publish()
	}
	return a, err
}

// unsubscribe leaves the stream; ended says the stream ended with it.
func (s *Sub) unsubscribe(ctx context.Context) (*Answer, bool, error) {
	st := s.st
	d := st.d
	d.subMu.Lock()
	defer d.subMu.Unlock()
	st.mu.Lock()
	_, was := st.subs[s]
	delete(st.subs, s)
	left := len(st.subs)
	st.mu.Unlock()
	if !was {
		return nil, false, fmt.Errorf("%w: subscription %q ended already", ErrBadMessage, s.id)
	}
	if left > 0 || d.streams[st.key] != st {
		return &Answer{Device: d.serial, Envelope: localEnvelope(resource.Unsubscribe, st.uri)}, false, nil
	}
	delete(d.streams, st.key)
	ctx, cancel := context.WithTimeout(ctx, d.b.cfg.Timeout)
	defer cancel()
	env, err := st.sub.Unsubscribe(ctx)
	if err != nil {
		return nil, true, deviceError(d, err)
	}
	return &Answer{Device: d.serial, Envelope: env}, true, nil
}
