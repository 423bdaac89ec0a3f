package radio

import (
	"fmt"
	"math"
	"time"

	"senseboard/clock"
	"senseboard/noise"
	"senseboard/profile"
	"senseboard/resource"
)

// The throughput model of a connection (profile.Airtime, Config.Airtime):
// what the air carries from the device to the central, and what it loses.
//
// The device's notifications wait in its transmit queue, at most TXQueue
// of them, until connection events carry them out. A connection event
// comes every connection interval (Conn.Interval: the central's choice
// within the device's MinConnInterval..MaxConnInterval, the slowest when
// it has none) and carries at most PacketsPerEvent link-layer packets of at
// most DataLength payload bytes each; a notification of n bytes is one
// ATT PDU of n+3 bytes behind a 4-byte L2CAP header, so n+7 bytes cut into
// packets. A share MissedEvents of the connection events carry nothing, as
// interference and the central's other radio duties have it; which ones is
// drawn from the seed, so the same seed misses the same events.
//
// A stream's notification that finds the transmit queue full (all but its
// last place, which is kept for flow-controlled senders: command answers
// and log transfers, see Conn.TryNotify) is dropped whole, and
// so is one of a subscription whose source has a small buffer of its own
// (resource.Topic.Limit: the ECG front end's 32 samples, two
// notifications) when that many of its notifications wait already: their
// samples would wait in that buffer, not in the radio's queue. Clients see
// the loss as gaps in the timestamps.
//
// What is admitted leaves at the connection events, in the order it was
// sent: a client sees it late by up to an interval (more after missed
// events or when the queue is long), and what one event carries arrives
// together. A write of the central comes in a connection event, which
// carries what waits at once; the following events count from it.

// Grant returns the connection interval, in units of 1.25 ms, that a
// central which asks for interval (0: no wish) gets within the device's
// parameters: the nearest in MinConnInterval..MaxConnInterval, and
// MaxConnInterval, the slowest, when it has no wish.
func Grant(cp ConnParams, interval uint16) uint16 {
	if interval == 0 {
		return cp.MaxConnInterval
	}
	return max(cp.MinConnInterval, min(interval, cp.MaxConnInterval))
}

// Duration returns an interval in units of 1.25 ms as a duration.
func Duration(units uint16) time.Duration {
	return time.Duration(units) * 1250 * time.Microsecond
}

// IntervalUnits returns a central's connection interval d in units of
// 1.25 ms, as a Connect asks for it: 0 for none (the device chooses), or
// ConnIntervalMin..ConnIntervalMax (7.5 ms to 4 s) in whole units. Any other
// d is refused with ErrInterval.
func IntervalUnits(d time.Duration) (uint16, error) {
	if d == 0 {
		return 0, nil
	}
	if d < Duration(ConnIntervalMin) || d > Duration(ConnIntervalMax) || d%Duration(1) != 0 {
		return 0, fmt.Errorf("%w: %v is not 7.5 ms to 4 s in steps of 1.25 ms", ErrInterval, d)
	}
	return uint16(d / Duration(1)), nil
}

// Interval returns the connection's interval: the central's choice within
// the device's connection parameters (Grant).
func (c *Conn) Interval() time.Duration {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	return Duration(Grant(c.params, c.central.Interval))
}

// Granted returns the connection's parameters as the link runs them, as
// GET /Comm/Ble/Peers/{ConnHandle}/Params reports them: MinConnInterval
// and MaxConnInterval are both the interval the central was granted
// (Grant); the latency and the supervision timeout are the connection's.
func (c *Conn) Granted() ConnParams {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	cp := c.params
	cp.MinConnInterval = Grant(cp, c.central.Interval)
	cp.MaxConnInterval = cp.MinConnInterval
	return cp
}

// NotificationPackets returns how many link-layer packets a notification payload of n
// bytes takes with the model's data length: an ATT PDU of n+3 bytes behind a
// 4-byte L2CAP header.
func NotificationPackets(a *profile.Airtime, n int) int {
	return (n + 7 + a.DataLength - 1) / a.DataLength
}

// StreamPackets returns how many link-layer packets a stream payload of n
// bytes takes with the model and an ATT MTU: it goes out in notifications of at most
// MTU-3 bytes, each part behind a 2-byte header (code and reference, as
// GSP sends its DATA, DATA_PART2 and DATA_PART3).
func StreamPackets(a *profile.Airtime, n, mtu int) int {
	room := mtu - 3 - streamHeader
	full, rest := n/room, n%room
	p := full * NotificationPackets(a, room+streamHeader)
	if rest > 0 || n == 0 {
		p += NotificationPackets(a, rest+streamHeader)
	}
	return p
}

// streamParts returns how many notifications a stream payload of n bytes
// goes out as with an ATT MTU (see StreamPackets).
func streamParts(n, mtu int) int {
	room := mtu - 3 - streamHeader
	return max(1, (n+room-1)/room)
}

// streamHeader is the bytes before each part of a stream notification.
const streamHeader = 2

// streamAir is the noise stream of missed connection events.
const streamAir = 0xA1E

// airQueue is a connection's transmit queue under the model. Its
// connection events run lazily, when something asks for room and when the
// connection's event timer fires (only while something waits), so what it
// loses and when the rest leaves depend only on the times of the
// notifications and the seed.
type airQueue struct {
	// cfg is the connection's copy of Config.Airtime, the one every part
	// of the connection reads: set when it starts, never changed, so read
	// without airMu.
	cfg      profile.Airtime
	key      uint64 // seed of the missed events
	interf   *interferencePtr
	interval time.Duration // between connection events
	origin   time.Duration // time of event 0
	latest   time.Duration // the model's time: the latest it was given (at)
	next     int64         // the first event not run yet
	count    uint64        // events since the connection began: the key of the missed ones
	items    []airItem     // ring of what waits for the air
	head, n  int
	used     int       // places of the transmit queue the waiting items take
	sent     int       // packets of the head item already sent
	out      []airItem // carried out by connection events, not delivered yet, in order
	notes    int       // items waiting or carried out that become GATT notifications
}

// outKind says where an item goes once the air carried it out.
type outKind uint8

const (
	outSub  outKind = iota // a subscription's notification, to the transport's sink
	outGATT                // a notification of a characteristic, to Notifications
	outHRS                 // a heart-rate measurement, to HRS (and Notifications when note)
	outNUS                 // data of the serial service, to NUS (and Notifications when note)
)

// airItem is a notification waiting in the transmit queue, or carried out.
type airItem struct {
	packets int
	places  int                    // of the transmit queue: one per notification it goes out as
	owner   *resource.Subscription // the subscription of an outSub item; of an outGATT item's stream
	later   bool                   // an outGATT item that is a later part of its notification
	kind    outKind
	event   uint64 // the connection event that carried it out
	content any    // outSub
	char    UUID   // outGATT
	data    []byte // outGATT, outNUS; outHRS: the measurement as notified
	hrs     HRSData
	note    bool // outHRS, outNUS: also a notification of the characteristic
}

// start anchors the connection events at now (the model's time at now)
// with an interval.
func (q *airQueue) start(now, interval time.Duration) {
	q.origin, q.interval, q.next = q.at(now), interval, 0
}

// at returns the model's time at now and moves it on to now: the latest
// time the model was given, so that it never goes back. Its callers read
// the time when their clock's call fell due (Peripheral.airNow), and calls
// on other goroutines, or due before the last one that ran, may read an
// earlier time than the model has seen: what they do counts at the
// model's time.
func (q *airQueue) at(now time.Duration) time.Duration {
	q.latest = max(q.latest, now)
	return q.latest
}

// eventTime returns the time of event k.
func (q *airQueue) eventTime(k int64) time.Duration {
	return q.origin + time.Duration(k)*q.interval
}

// missed reports whether event k carries nothing: a share of the events
// (the model's, or more under interference).
func (q *airQueue) missed(k int64) bool {
	share := q.cfg.MissedEvents
	if q.interf != nil {
		share, _ = q.interf.Load().at(q.eventTime(k), share)
	}
	n := q.count + uint64(k-q.next)
	return share > 0 && noise.Uniform(noise.Key(q.key, streamAir, n)) < share
}

// run runs the connection events up to now (the model's time at now).
func (q *airQueue) run(now time.Duration) {
	now = q.at(now)
	if now < q.origin {
		return
	}
	due := int64((now - q.origin) / q.interval)
	for ; q.next <= due && q.n > 0; q.next, q.count = q.next+1, q.count+1 {
		if !q.missed(q.next) {
			q.send(q.cfg.PacketsPerEvent)
		}
	}
	if q.next <= due {
		q.count += uint64(due + 1 - q.next)
		q.next = due + 1
	}
}

// write runs a connection event at now (the model's time at now), in
// which a write of the central arrived (it did arrive, so the event is not
// missed), and lets the following events come every interval from it.
func (q *airQueue) write(now time.Duration) {
	now = q.at(now)
	q.run(now)
	q.origin, q.next = now, 1
	q.send(q.cfg.PacketsPerEvent)
	q.count++
}

// send takes up to budget packets off the queue; the items it completes
// go out, marked with the event.
func (q *airQueue) send(budget int) {
	for budget > 0 && q.n > 0 {
		it := &q.items[q.head]
		if need := it.packets - q.sent; need > budget {
			q.sent += budget
			return
		} else {
			budget -= need
		}
		it.event = q.count
		q.out = append(q.out, *it)
		q.used -= it.places
		*it = airItem{}
		q.head++
		if q.head == len(q.items) {
			q.head = 0
		}
		q.n--
		q.sent = 0
	}
}

// roomFor reports whether k notifications (places of the transmit queue)
// of owner, whose source buffers limit of its items (0: no buffer of its
// own), may wait now. Streams leave the last place to flow-controlled
// senders (flow), so that they cannot starve a transfer or a command's
// answer.
func (q *airQueue) roomFor(now time.Duration, k int, owner *resource.Subscription, limit int, flow bool) bool {
	q.run(now)
	places := q.cfg.TXQueue
	if !flow {
		places--
	}
	if q.used+k > places {
		return false
	}
	if limit > 0 && owner != nil {
		waiting := 0
		for i, j := 0, q.head; i < q.n; i++ {
			if q.items[j].owner == owner && !q.items[j].later {
				waiting++
			}
			if j++; j == len(q.items) {
				j = 0
			}
		}
		if waiting >= limit {
			return false
		}
	}
	return true
}

// push queues an item; roomFor said there is room.
func (q *airQueue) push(it airItem) {
	if q.n == len(q.items) { // grows as notifications wait, up to the queue's places
		items := make([]airItem, min(max(2*len(q.items), 4), q.cfg.TXQueue))
		k := copy(items, q.items[q.head:])
		copy(items[k:], q.items[:q.head])
		q.items, q.head = items, 0
	}
	i := q.head + q.n
	if i >= len(q.items) {
		i -= len(q.items)
	}
	q.items[i] = it
	q.n++
	q.used += it.places
}

// nextEvent returns the time of the next connection event after now (the
// model's time at now) that carries something: when what waits leaves, and
// the queue may have room again.
func (q *airQueue) nextEvent(now time.Duration) time.Duration {
	now = max(now, q.latest)
	k := int64(0)
	if now >= q.origin {
		k = int64((now-q.origin)/q.interval) + 1
	}
	for i := 0; i < 1000 && q.missed(k); i++ {
		k++
	}
	return q.eventTime(k)
}

// airSink is the sink of a connection's subscriptions: what the model
// admits waits for the air and then goes on to the transport's sink, the
// rest is dropped (and counted on its subscription). It holds the
// Recyclable content it admits (resource.HoldingSink) and hands its hold
// on with it (handOut).
type airSink struct{ c *Conn }

func (s airSink) Notify(n resource.Notification) bool { return s.c.admitContent(n) }

// HoldsRecyclable marks airSink as a resource.HoldingSink.
func (airSink) HoldsRecyclable() {}

func (s airSink) Ended(sub *resource.Subscription, reason resource.EndReason) {
	s.c.subEnded(sub, reason)
}

// queueLocked puts an admitted item in the transmit queue, where it takes
// its places (one when it says none); c.airMu is held.
func (c *Conn) queueLocked(now time.Duration, it airItem) {
	it.places = max(it.places, 1)
	c.air.push(it)
	if it.kind == outGATT || it.note {
		c.air.notes++
	}
	c.armLocked(now)
}

// armLocked makes sure the event timer fires at the next connection event
// that carries packets while something waits for one (an item, or a
// WhenRoom callback), and at once when items were carried out by events
// that ran lazily; c.airMu is held. After the connection ended it arms
// nothing: an event already firing, or a late admission, would otherwise
// run events until the queue empties, delivering nothing.
func (c *Conn) armLocked(now time.Duration) {
	if c.airEnd || c.air.n == 0 && len(c.air.out) == 0 && len(c.waiters) == 0 {
		return
	}
	at := now
	if len(c.air.out) == 0 {
		at = c.air.nextEvent(now)
	}
	if c.evOn && c.evAt <= at {
		return
	}
	c.evAt, c.evOn = at, true
	c.ev.At(at) // at the event's time, however late now is read; in place of a later one pending
}

// stopEventLocked disarms the event timer; c.airMu is held.
func (c *Conn) stopEventLocked() {
	if c.evOn {
		c.ev.Stop()
		c.evOn = false
	}
}

// releaseWaitingLocked releases the subscriptions' notifications that wait
// for the air, or were carried out and wait to be handed out, when the
// connection ends: no event hands them out any more (runEvents releases
// what it carries after the end). The items stay, without their content,
// so that Waiting still counts them. c.airMu is held.
func (c *Conn) releaseWaitingLocked() {
	q := &c.air
	for i, j := 0, q.head; i < q.n; i++ {
		if it := &q.items[j]; it.kind == outSub {
			resource.Release(it.content)
			it.content = nil
		}
		if j++; j == len(q.items) {
			j = 0
		}
	}
	for i := range q.out {
		if it := &q.out[i]; it.kind == outSub {
			resource.Release(it.content)
			it.content = nil
		}
	}
}

// airNow returns the time of the throughput model: when the clock's call
// under way fell due (clock.Due), so that what a call that runs late
// (after the process was held up) hands the model, and the connection
// events due meanwhile, are placed when they fell due, in order, as they
// would have run in time.
func (p *Peripheral) airNow() time.Duration { return clock.Due(p.clk) }

// rearm arms the event timer anew, for the next connection event that
// carries packets as the model now has it (after interference ended).
func (c *Conn) rearm() {
	now := c.p.airNow()
	c.airMu.Lock()
	defer c.airMu.Unlock()
	c.stopEventLocked()
	c.armLocked(now)
}

// eventKind says which connection events runEvents runs.
type eventKind uint8

const (
	eventsDue  eventKind = iota // the events due now
	eventWrite                  // and one at now, in which a write of the central arrived
	eventLast                   // and a last one that carries everything that waits
)

// event runs the connection events due now, on the event timer.
func (c *Conn) event() { c.runEvents(eventsDue) }

// flush sends what waits for the air before the device resets or turns
// off: the firmware answers a mode change first and switches after, so
// that what it sent before, the answer among it, reaches the central.
func (c *Conn) flush() {
	if c.air.cfg.Enabled {
		c.runEvents(eventLast)
	}
}

// runEvents runs the connection events of kind, hands out in order what
// they carried, and calls back whoever waited for room.
func (c *Conn) runEvents(kind eventKind) {
	now := c.p.airNow()
	c.outMu.Lock()
	c.airMu.Lock()
	c.stopEventLocked() // a write's event comes before it
	switch kind {
	case eventWrite:
		c.air.write(now)
	case eventLast:
		c.air.run(now)
		c.air.send(math.MaxInt)
	default:
		c.air.run(now)
	}
	out := c.air.out
	c.air.out = c.spare[:0]
	waiters := c.waiters
	c.waiters = nil
	c.armLocked(now)
	c.airMu.Unlock()

	notes := 0
	c.p.mu.Lock()
	for i := range out {
		if !c.ended && !c.lost.Load() { // a lost link carries nothing
			c.handOut(&out[i])
		} else if out[i].kind == outSub {
			resource.Release(out[i].content)
		}
		if out[i].kind == outGATT || out[i].note {
			notes++
		}
		out[i] = airItem{}
	}
	c.p.mu.Unlock()
	c.airMu.Lock()
	c.air.notes -= notes
	c.spare = out[:0]
	c.airMu.Unlock()
	c.outMu.Unlock()
	for _, f := range waiters {
		f()
	}
	c.out.wakeReader()
}

// handOut delivers an item the air carried out, or one that leaves at once
// with the model off; c.p.mu is held. A central that does not read loses
// it, as over the air; a subscription counts it in its Dropped while it
// lasts.
func (c *Conn) handOut(it *airItem) {
	switch it.kind {
	case outSub:
		// The content's hold goes with it to a sink that releases what it
		// takes; any other may keep it.
		if r, ok := it.content.(resource.Recyclable); ok && !c.sinkHolds {
			r.Keep()
		}
		if c.sink.Notify(resource.Notification{Sub: it.owner, Content: it.content}) {
			c.out.handed()
			break
		}
		resource.Release(it.content)
		if it.owner.Active() {
			it.owner.Lost() // carried, but the reader had no room: lost as over the air, and counted
		}
	case outGATT:
		// The parts of a notification are handed out one after the other.
		// One the reader has no room for loses the notification, counted
		// once on its stream (NotifyStream), and its later parts go too.
		if it.later && c.lostPart {
			return
		}
		ok := c.note(it.char, it.data)
		if !ok && it.owner != nil && it.owner.Active() {
			it.owner.Lost()
		}
		c.lostPart = !ok
	case outHRS:
		put(&c.out, &c.out.hrs, it.hrs)
		if it.note {
			c.note(HeartRateMeasurement, it.data)
		}
	case outNUS:
		put(&c.out, &c.out.nus, it.data)
		if it.note {
			c.note(NUSTX, it.data)
		}
	}
}

// takes reports whether a reader has room for an item that leaves at once
// (handOut loses it otherwise); c.p.mu is held, so no one else sends.
func (c *Conn) takes(it *airItem) bool {
	if it.kind != outNUS {
		return true
	}
	return waiting(&c.out, &c.out.nus) < nusLimit || it.note && waiting(&c.out, &c.out.notes) < notesLimit
}

// own copies the data of a NUS item, which is the caller's, into the
// notification slab; c.p.mu is held.
func (c *Conn) own(it *airItem) {
	if it.kind == outNUS {
		it.data = c.carve(it.data)
	}
}

// note hands a notification of a characteristic to the central, and
// reports false when the central had no room for it; c.p.mu is held.
func (c *Conn) note(char UUID, data []byte) bool {
	return put(&c.out, &c.out.notes, Notification{Char: char, Data: data})
}

// send hands a notification of the connection's services to the air: with
// the model on it waits in the transmit queue when there is room, with
// the model off it leaves at once when a reader takes it; otherwise it is
// lost, as over the air. c.p.mu is held. The data of a NUS item is the
// caller's: it is copied only once the air or a reader takes it.
func (c *Conn) send(now time.Duration, it airItem) {
	if c.lost.Load() {
		return
	}
	a := &c.air.cfg
	if !a.Enabled {
		if c.takes(&it) {
			c.own(&it)
			c.handOut(&it)
		}
		return
	}
	c.airMu.Lock()
	defer c.airMu.Unlock()
	if !c.air.roomFor(now, 1, nil, 0, false) {
		return
	}
	c.own(&it)
	it.packets = NotificationPackets(a, len(it.data))
	c.queueLocked(now, it)
}

// admitContent asks the throughput model for room for a notification of
// a subscription made over the connection: its content sized by
// Config.NotificationSize, in parts of the connection's MTU, each a
// notification of its own that takes a place in the transmit queue, as
// GSP sends them. Admitted, it waits for the air. After the connection
// ended it is dropped.
func (c *Conn) admitContent(n resource.Notification) bool {
	a := &c.air.cfg
	size := -1
	if f := c.p.cfg.NotificationSize; f != nil {
		size = f(n.Content)
	}
	limit := 0
	if n.Sub != nil && n.Sub.Topic != nil {
		limit = n.Sub.Topic.Limit
	}
	now := c.p.airNow()
	c.airMu.Lock()
	defer c.airMu.Unlock()
	packets, parts := NotificationPackets(a, c.airMTU-3), 1 // airMTU is the model's, under airMu
	if size >= 0 {
		packets, parts = StreamPackets(a, size, c.airMTU), streamParts(size, c.airMTU)
	}
	_, hide := c.air.interf.Load().at(now, 0)
	if c.airEnd || c.lost.Load() || !c.air.roomFor(now, parts, n.Sub, limit, false) {
		if hide || len(c.stamps) > 0 {
			c.lostLocked(n.Sub, n.Content, hide)
		}
		return false
	}
	content := n.Content
	if hide || len(c.stamps) > 0 {
		// A notification that goes out restamped may be a copy that
		// shares the original's arrays: the original is never reused.
		if r, ok := content.(resource.Recyclable); ok {
			r.Keep()
		}
		content = c.stampLocked(n.Sub, content, hide)
	}
	c.queueLocked(now, airItem{packets: packets, places: parts, owner: n.Sub, kind: outSub, content: content})
	return true
}

// Waiting returns how many notifications wait for the air (under the
// throughput model): admitted, not carried out yet.
func (c *Conn) Waiting() int {
	c.airMu.Lock()
	defer c.airMu.Unlock()
	return c.air.n + len(c.air.out)
}

// Collect runs f while no connection event hands out what it carried: a
// transport that takes what waits in f (Take, and the sink given to
// Connect) sees the notifications of each event whole, and can send them
// together.
func (c *Conn) Collect(f func()) {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	f()
}
