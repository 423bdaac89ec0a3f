package resource

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// A Source is the provider side of a subscribable resource.
//
// The Hub calls Subscribe before adding a subscriber to a topic, holding the
// hub's lock: a Source must not end subscriptions or close clients from it,
// and must not do so elsewhere while holding a lock that Subscribe takes.
// Unsubscribed is called without the hub's lock after a subscriber left.
type Source interface {
	// Subscribe decides on a new subscriber of t; t.Subscribers counts those
	// already there. A response that is not 2xx refuses the subscription.
	Subscribe(t *Topic, req *Request) Response
	// Unsubscribed tells that a subscriber left t; t.Subscribers counts those
	// that remain.
	Unsubscribed(t *Topic)
}

// An Announcer is a Source that sends each new subscriber a first notification
// (for example /Time/Detailed notifies at subscription). Announce is called
// after the subscriber has been added, without the hub's lock.
type Announcer interface {
	Announce(sub *Subscription)
}

// EndReason says why a subscription ended.
type EndReason uint8

// The reasons a subscription ends.
const (
	EndUnsubscribed EndReason = iota + 1 // the client unsubscribed
	EndClientGone                        // the client closed or went away
	EndReset                             // the device reset
	EndPowerOff                          // the device turned off
	EndSource                            // the resource ended it (for example a peer disconnected)
)

var endReasonNames = [...]string{"", "unsubscribed", "client gone", "device reset", "device powered off", "ended by the resource"}

func (r EndReason) String() string {
	if int(r) < len(endReasonNames) {
		return endReasonNames[r]
	}
	return fmt.Sprintf("EndReason(%d)", uint8(r))
}

// Notification is one message of a subscription. Content is shared by every
// subscriber of the topic and must not be modified.
type Notification struct {
	Sub     *Subscription
	Content any
}

// A Sink receives the notifications of one client's subscriptions.
type Sink interface {
	// Notify delivers n. It is called by publishers and must not block: a
	// sink that cannot take n drops it and returns false.
	Notify(n Notification) bool
	// Ended tells that sub ended for a reason other than the client's own
	// unsubscribe or Close. No notification of sub follows that matters:
	// consumers skip notifications of ended subscriptions.
	Ended(sub *Subscription, reason EndReason)
}

// Client is one caller of a device that can hold subscriptions: a serial
// session, a bridge connection, an app. Closing it ends its subscriptions.
type Client struct {
	name string
	sink Sink

	mu     sync.Mutex
	subs   map[*Topic]*Subscription
	closed bool
	wait   int32 // SetWait's; 0: each topic's Limit
}

// NewClient returns a client named for messages whose notifications go to sink.
func NewClient(name string, sink Sink) *Client {
	return &Client{name: name, sink: sink, subs: make(map[*Topic]*Subscription)}
}

// Name returns the client's name.
func (c *Client) Name() string { return c.name }

// SetWait lets up to n notifications of a topic wait for each of the
// client's subscriptions made from then on, in place of the topic's Limit
// (n <= 0 goes back to the topics' Limits). A topic's Limit is the room on
// the way from the device to a transport's client (the ECG front end's
// buffer behind a radio link); a client that keeps up in the device's own
// time and falls behind only when its host does (the data logger, an
// in-device app) sizes its own. Its Queue's capacity still bounds them all.
func (c *Client) SetWait(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wait = int32(max(n, 0))
}

// Subscriptions returns the client's active subscriptions.
func (c *Client) Subscriptions() []*Subscription {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Subscription, 0, len(c.subs))
	for _, s := range c.subs {
		out = append(out, s)
	}
	return out
}

// Close ends every subscription of the client and refuses new ones. It is safe
// to call more than once.
func (c *Client) Close() {
	c.mu.Lock()
	c.closed = true
	subs := make([]*Subscription, 0, len(c.subs))
	for _, s := range c.subs {
		subs = append(subs, s)
	}
	clear(c.subs)
	c.mu.Unlock()
	for _, s := range subs {
		s.Topic.hub.detach(s, EndClientGone, false)
	}
}

// Subscription is one client's subscription to one topic.
type Subscription struct {
	// what a publisher reads for each notification, together
	stall   atomic.Pointer[Stall]
	queue   *Queue // the client's sink when it is a Queue
	holds   bool   // the client's sink is a HoldingSink (a Queue, say)
	active  atomic.Bool
	limit   int32         // from the topic: most notifications waiting in a Queue
	pending atomic.Int32  // notifications waiting in a Queue
	dropped atomic.Uint64 // a Queue dates each notification with it (Event.Dropped)

	id     uint64
	Topic  *Topic
	Client *Client
	// Tag is free for the client's transport (for example a bridge message id).
	Tag any
}

// ID returns the subscription's number, unique within its hub.
func (s *Subscription) ID() uint64 { return s.id }

// Active reports whether the subscription has not ended.
func (s *Subscription) Active() bool { return s.active.Load() }

// Dropped returns how many notifications the client's sink could not take.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Lost counts a notification of the subscription as dropped after its
// client's sink took it: a sink that hands notifications on later (the
// radio's throughput model, when the air has carried one) calls it when
// the next sink has no room.
func (s *Subscription) Lost() { s.dropped.Add(1) }

// Notify delivers content to this subscriber alone, as Topic.Publish does for
// all of them.
func (s *Subscription) Notify(content any) bool {
	if !s.active.Load() || s.stall.Load() != nil {
		return false
	}
	if taken, _ := s.hand(content, nil); taken {
		return true
	}
	s.dropped.Add(1)
	return false
}

// Offer delivers content to this subscriber alone, as Notify does, but a
// refusal is not counted as dropped: the caller keeps the content and offers
// it again later. A transfer that must lose nothing (a log read by
// subscription) paces itself this way. When the subscriber's sink is a
// Queue that has no room for content, and room is not nil, the queue calls
// room once, when its consumer has taken what waits (Queue.Drain, on the
// consumer's goroutine), unless it closes first, and Offer reports later:
// the caller offers again then, as soon as the transport has room, and
// room must not block. When later is false after a refusal, nothing calls
// room (the subscription has ended or is stalled, its sink is not a
// Queue, or the queue is closed): a caller that goes on tries again by
// its own means.
func (s *Subscription) Offer(content any, room func()) (taken, later bool) {
	if !s.active.Load() || s.stall.Load() != nil {
		return false, false
	}
	return s.hand(content, room)
}

// Recyclable is notification content that its maker reuses once every
// holder is done with it, so that a stream's notifications need not be
// allocated one by one. Its maker holds it while it publishes it, and
// releases it after. Delivering it to a subscriber's Queue adds a holder;
// the Queue's consumer releases the content once it is done with it (a
// session, once it has encoded the notification), or never, and then the
// content is not reused. A HoldingSink is held for as a Queue is. Any
// other sink may keep what it takes without saying when it is done, so
// delivering to one keeps the content from ever being reused. Such a sink
// may hand the content on to a Queue of its own whose consumer releases
// what it takes: a release of kept content does nothing.
type Recyclable interface {
	// Hold adds a holder.
	Hold()
	// Release ends a hold; the last gives the content back to its maker.
	// Once the content is kept, it does nothing.
	Release()
	// Keep makes the content never go back to its maker, however many
	// keep it.
	Keep()
}

// Release ends a hold of content that is Recyclable; other content it
// leaves alone.
func Release(content any) {
	if r, ok := content.(Recyclable); ok {
		r.Release()
	}
}

// HoldingSink is a sink that sees that the Recyclable content it takes is
// released once done with, so that delivering to it need not keep the
// content for good: the deliverer holds the content for the sink before
// Notify and releases it when Notify refuses it; what the sink takes, it
// releases, or hands on with its hold to another HoldingSink. It may keep
// content (Keep) it cannot follow. A Queue is one (its consumer releases
// what it drains), and so is the radio's throughput model: what it admits
// waits for the air and then goes on to the transport's queue.
type HoldingSink interface {
	Sink
	// HoldsRecyclable says that the sink follows the contract above; it
	// does nothing.
	HoldsRecyclable()
}

// notify hands n to the client's sink, to its Queue without an interface
// call when it is one, and offers it there when room is not nil
// (Subscription.Offer).
func (s *Subscription) notify(n Notification, room func()) (taken, later bool) {
	if q := s.queue; q != nil {
		if room != nil {
			return q.offer(n, room)
		}
		return q.Notify(n), false
	}
	return s.Client.sink.Notify(n), false
}

// hand gives content to the subscriber's sink, offering it with room as
// notify does, and reports whether the sink took it: a Recyclable is held
// for a HoldingSink while it keeps it, and kept for good by any other sink.
func (s *Subscription) hand(content any, room func()) (taken, later bool) {
	n := Notification{Sub: s, Content: content}
	r, ok := content.(Recyclable)
	switch {
	case !ok:
		return s.notify(n, room)
	case !s.holds:
		r.Keep()
		return s.notify(n, room)
	}
	r.Hold()
	if taken, later = s.notify(n, room); !taken {
		r.Release()
	}
	return taken, later
}

// Stalled reports whether the subscription is stalled (Hub.Stall).
func (s *Subscription) Stalled() bool { return s.stall.Load() != nil }

// Topic is one subscribable resource instance, for example /Meas/Acc/104, and
// its subscribers.
type Topic struct {
	uri  string
	args []Value
	src  Source
	hub  *Hub
	subs atomic.Pointer[subList]
	// Limit, when positive, is how many notifications of the topic may wait
	// for one subscriber in its client's Queue; more are dropped. A source
	// sets it in Subscribe (the ECG front end holds 32 samples: two
	// notifications). A client may set its own instead (Client.SetWait).
	Limit int
	// Data is free for the Source (for example the sensor stream feeding it).
	Data any
}

// subList is a topic's subscribers. With one, the slice and its array are
// one small allocation: a publisher meets one cache miss for both.
type subList struct {
	subs []*Subscription
	one  [1]*Subscription
}

func newSubList(subs []*Subscription) *subList {
	l := &subList{subs: subs}
	if len(subs) == 1 {
		l.one[0] = subs[0]
		l.subs = l.one[:]
	}
	return l
}

// URI returns the topic's canonical URI.
func (t *Topic) URI() string { return t.uri }

// Args returns the bound path parameters of the topic's resource.
func (t *Topic) Args() []Value { return t.args }

// Subscribers returns the number of subscribers.
func (t *Topic) Subscribers() int {
	if p := t.subs.Load(); p != nil {
		return len(p.subs)
	}
	return 0
}

// Subscriptions returns the topic's subscriptions now; the slice is the
// caller's.
func (t *Topic) Subscriptions() []*Subscription {
	if p := t.subs.Load(); p != nil {
		return append([]*Subscription(nil), p.subs...)
	}
	return nil
}

// Publish delivers content to every subscriber and returns how many took it.
// It never blocks and takes no lock; content must not be modified afterwards
// (a Recyclable's maker holds it until Publish returns).
func (t *Topic) Publish(content any) int {
	p := t.subs.Load()
	if p == nil {
		return 0
	}
	n := 0
	for _, s := range p.subs {
		if s.stall.Load() != nil {
			continue // stalled: the source sends it nothing
		}
		if taken, _ := s.hand(content, nil); taken {
			n++
		} else {
			s.dropped.Add(1)
		}
	}
	return n
}

// Hub holds the topics of one device and enforces its subscription limit.
type Hub struct {
	limit int

	count atomic.Int64 // readable from a Source's Subscribe, under the hub's lock
	peak  atomic.Int64

	mu     sync.Mutex
	topics map[string]*Topic
	nextID uint64
}

// NewHub returns a hub that allows at most limit subscriptions at once
// (no limit when limit <= 0).
func NewHub(limit int) *Hub { return &Hub{limit: limit, topics: make(map[string]*Topic)} }

// Count returns the number of active subscriptions. It takes no lock, so a
// Source may call it.
func (h *Hub) Count() int { return int(h.count.Load()) }

// Peak returns the largest number of simultaneous subscriptions since the
// hub was made or ResetPeak was called.
func (h *Hub) Peak() int { return int(h.peak.Load()) }

// ResetPeak starts the peak count again from the current count.
func (h *Hub) ResetPeak() { h.peak.Store(h.count.Load()) }

func (h *Hub) raisePeak(n int64) {
	for {
		p := h.peak.Load()
		if n <= p || h.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

// Topic returns the topic with the canonical URI, or nil when it has no subscribers.
func (h *Hub) Topic(uri string) *Topic {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.topics[uri]
}

// Subscribe subscribes req.Client to the resource req names, whose canonical
// URI is uri and whose notifications come from src. The response is src's
// answer, or 400 without a client, 409 when the client already subscribes to
// the topic, or 507 at the subscription limit.
func (h *Hub) Subscribe(req *Request, uri string, src Source) (*Subscription, Response) {
	c := req.Client
	if c == nil {
		return nil, Errorf(StatusBadRequest, "subscribing needs a client that can receive notifications")
	}
	h.mu.Lock()
	c.mu.Lock()
	closed, wait := c.closed, c.wait
	t := h.topics[uri]
	_, dup := c.subs[t]
	c.mu.Unlock()
	switch {
	case closed:
		h.mu.Unlock()
		return nil, Errorf(StatusServiceUnavailable, "client %s is closed", c.name)
	case t != nil && dup:
		h.mu.Unlock()
		return nil, Errorf(StatusConflict, "already subscribed to %s; unsubscribe first", uri)
	case h.limit > 0 && h.Count() >= h.limit:
		h.mu.Unlock()
		return nil, Errorf(StatusInsufficientStorage, "the device allows at most %d simultaneous subscriptions", h.limit)
	}
	fresh := t == nil
	if fresh {
		t = &Topic{uri: uri, args: append([]Value(nil), req.Args...), src: src, hub: h}
	}
	resp := src.Subscribe(t, req)
	if !resp.Status.OK() {
		h.mu.Unlock()
		return nil, resp
	}
	h.nextID++
	s := &Subscription{id: h.nextID, Topic: t, Client: c, limit: int32(t.Limit)}
	if wait > 0 {
		s.limit = wait
	}
	s.queue, _ = c.sink.(*Queue)
	_, s.holds = c.sink.(HoldingSink)
	s.active.Store(true)
	var subs []*Subscription
	if p := t.subs.Load(); p != nil {
		subs = append(subs, p.subs...)
	}
	subs = append(subs, s)
	t.subs.Store(newSubList(subs))
	if fresh {
		h.topics[uri] = t
	}
	h.raisePeak(h.count.Add(1))
	c.mu.Lock()
	c.subs[t] = s
	c.mu.Unlock()
	h.mu.Unlock()
	if a, ok := src.(Announcer); ok {
		a.Announce(s)
	}
	return s, resp
}

// Unsubscribe ends req.Client's subscription to the topic with the canonical
// URI. It answers 404 when there is none.
func (h *Hub) Unsubscribe(req *Request, uri string) Response {
	c := req.Client
	if c == nil {
		return Errorf(StatusBadRequest, "unsubscribing needs the client that subscribed")
	}
	h.mu.Lock()
	t := h.topics[uri]
	c.mu.Lock()
	s := c.subs[t]
	if s != nil {
		delete(c.subs, t)
	}
	c.mu.Unlock()
	h.mu.Unlock()
	if s == nil {
		return Errorf(StatusNotFound, "not subscribed to %s", uri)
	}
	h.detach(s, EndUnsubscribed, false)
	return OK(nil)
}

// End ends one subscription for reason, telling its client's sink.
func (h *Hub) End(s *Subscription, reason EndReason) {
	s.Client.mu.Lock()
	if s.Client.subs[s.Topic] == s {
		delete(s.Client.subs, s.Topic)
	}
	s.Client.mu.Unlock()
	h.detach(s, reason, true)
}

// EndAll ends every subscription for reason, telling each client's sink, as a
// device does when it resets or turns off.
func (h *Hub) EndAll(reason EndReason) {
	h.mu.Lock()
	var all []*Subscription
	for _, t := range h.topics {
		if p := t.subs.Load(); p != nil {
			all = append(all, p.subs...)
		}
	}
	h.mu.Unlock()
	for _, s := range all {
		h.End(s, reason)
	}
}

// detach removes s from its topic, tells its sink when told to, and tells the
// topic's source.
func (h *Hub) detach(s *Subscription, reason EndReason, tell bool) {
	t := s.Topic
	h.mu.Lock()
	if !s.active.Swap(false) {
		h.mu.Unlock()
		return
	}
	var subs []*Subscription
	if p := t.subs.Load(); p != nil {
		for _, o := range p.subs {
			if o != s {
				subs = append(subs, o)
			}
		}
	}
	if len(subs) == 0 {
		t.subs.Store(nil)
		if h.topics[t.uri] == t {
			delete(h.topics, t.uri)
		}
	} else {
		t.subs.Store(newSubList(subs))
	}
	h.count.Add(-1)
	var emptied *Stall
	if st := s.stall.Load(); st != nil {
		delete(st.subs, s)
		if len(st.subs) == 0 && !st.over {
			st.over, emptied = true, st
		}
	}
	h.mu.Unlock()
	if emptied != nil && emptied.recovered != nil {
		emptied.recovered()
	}
	if tell {
		s.Client.sink.Ended(s, reason)
	}
	t.src.Unsubscribed(t)
}

// Stall is a fault of a device's streams: the subscriptions it holds stay
// registered but get no notifications, until each is subscribed again (a
// new subscription is a new one, not stalled) or the stall ends.
type Stall struct {
	h         *Hub
	subs      map[*Subscription]bool // guarded by h.mu
	over      bool                   // recovered or ended; guarded by h.mu
	recovered func()
}

// Stall stalls every active subscription whose topic's URI match accepts,
// and that no other stall holds. When the last of them has ended (its
// client subscribed again, unsubscribed or went away), recovered runs once,
// without the hub's lock; it runs at once, before Stall returns, when
// there is none to stall. End resumes those that remain.
func (h *Hub) Stall(match func(uri string) bool, recovered func()) *Stall {
	st := &Stall{h: h, subs: map[*Subscription]bool{}, recovered: recovered}
	h.mu.Lock()
	for uri, t := range h.topics {
		if !match(uri) {
			continue
		}
		if p := t.subs.Load(); p != nil {
			for _, s := range p.subs {
				if s.stall.CompareAndSwap(nil, st) {
					st.subs[s] = true
				}
			}
		}
	}
	empty := len(st.subs) == 0
	st.over = empty
	h.mu.Unlock()
	if empty && recovered != nil {
		recovered()
	}
	return st
}

// Len returns how many subscriptions the stall still holds.
func (st *Stall) Len() int {
	st.h.mu.Lock()
	defer st.h.mu.Unlock()
	return len(st.subs)
}

// End resumes the subscriptions the stall still holds; recovered does not
// run.
func (st *Stall) End() {
	st.h.mu.Lock()
	defer st.h.mu.Unlock()
	for s := range st.subs {
		s.stall.CompareAndSwap(st, nil)
	}
	clear(st.subs)
	st.over = true
}
