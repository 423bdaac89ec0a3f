package radio

import (
	"time"

	"senseboard/noise"
	"senseboard/profile"
	"senseboard/resource"
)

// The throughput model of a connection (profile.Airtime, Config.Airtime):
// what the air carries from the device to the central, and what it loses.
//
// The device's notifications wait in its transmit queue, at most TXQueue
// of them, until connection events carry them out. A connection event
// comes every connection interval (the connection's MaxConnInterval: the
// central may grant any interval of the range, and the model takes the
// slowest) and carries at most PacketsPerEvent link-layer packets of at
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
// A notification that is admitted reaches the central at once: the model
// decides what is lost, not when the rest arrives.

// Interval returns the connection interval the model uses for cp: its
// MaxConnInterval.
func Interval(cp ConnParams) time.Duration {
	return time.Duration(cp.MaxConnInterval) * 1250 * time.Microsecond
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

// streamHeader is the bytes before each part of a stream notification.
const streamHeader = 2

// streamAir is the noise stream of missed connection events.
const streamAir = 0xA1E

// airQueue is a connection's transmit queue under the model. It runs
// lazily: each admission first runs the connection events that have come
// since the last one, so it needs no goroutine or timer, and what it loses
// depends only on the times of the admissions and the seed.
type airQueue struct {
	cfg      profile.Airtime
	key      uint64        // seed of the missed events
	interval time.Duration // between connection events
	origin   time.Duration // time of event 0
	next     int64         // the first event not run yet
	count    uint64        // events since the connection began: the key of the missed ones
	items    [profile.MaxTXQueue]airItem
	head, n  int
	sent     int // packets of the head item already sent
}

// airItem is a notification waiting in the transmit queue.
type airItem struct {
	packets int
	owner   *resource.Subscription // nil for notifications of a characteristic
}

// start anchors the connection events at now with an interval.
func (q *airQueue) start(now, interval time.Duration) {
	q.origin, q.interval, q.next = now, interval, 0
}

// eventTime returns the time of event k.
func (q *airQueue) eventTime(k int64) time.Duration {
	return q.origin + time.Duration(k)*q.interval
}

// missed reports whether event k carries nothing.
func (q *airQueue) missed(k int64) bool {
	n := q.count + uint64(k-q.next)
	return q.cfg.MissedEvents > 0 && noise.Uniform(noise.Key(q.key, streamAir, n)) < q.cfg.MissedEvents
}

// run runs the connection events up to now.
func (q *airQueue) run(now time.Duration) {
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

// write runs a connection event at now, in which a write of the central
// arrived (it did arrive, so the event is not missed), and lets the
// following events come every interval from it.
func (q *airQueue) write(now time.Duration) {
	q.run(now)
	q.origin, q.next = now, 1
	q.count++
	q.send(q.cfg.PacketsPerEvent)
}

// send takes up to budget packets off the queue.
func (q *airQueue) send(budget int) {
	for budget > 0 && q.n > 0 {
		it := &q.items[q.head]
		if need := it.packets - q.sent; need > budget {
			q.sent += budget
			return
		} else {
			budget -= need
		}
		*it = airItem{}
		q.head++
		if q.head == len(q.items) {
			q.head = 0
		}
		q.n--
		q.sent = 0
	}
}

// roomFor reports whether k notifications of owner, whose source buffers
// limit notifications (0: no buffer of its own), may wait now. Streams
// leave the last place to flow-controlled senders (flow), so that they
// cannot starve a transfer or a command's answer.
func (q *airQueue) roomFor(now time.Duration, k int, owner *resource.Subscription, limit int, flow bool) bool {
	q.run(now)
	places := q.cfg.TXQueue
	if !flow {
		places--
	}
	if q.n+k > places {
		return false
	}
	if limit > 0 && owner != nil {
		waiting := 0
		for i, j := 0, q.head; i < q.n; i++ {
			if q.items[j].owner == owner {
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

// push queues a notification; room said there is room.
func (q *airQueue) push(packets int, owner *resource.Subscription) {
	i := q.head + q.n
	if i >= len(q.items) {
		i -= len(q.items)
	}
	q.items[i] = airItem{packets: packets, owner: owner}
	q.n++
}

// admit queues a stream's notification when there is room and reports
// whether it did.
func (q *airQueue) admit(now time.Duration, packets int, owner *resource.Subscription, limit int) bool {
	if !q.roomFor(now, 1, owner, limit, false) {
		return false
	}
	q.push(packets, owner)
	return true
}

// nextRoom returns the time of the next connection event after now that
// carries something: when the queue may have room again.
func (q *airQueue) nextRoom(now time.Duration) time.Duration {
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
// admits goes on to the transport's sink, the rest is dropped (and counted
// on its subscription).
type airSink struct {
	c    *Conn
	next resource.Sink
}

func (s *airSink) Notify(n resource.Notification) bool {
	if !s.c.admitContent(n) {
		return false
	}
	return s.next.Notify(n)
}

func (s *airSink) Ended(sub *resource.Subscription, reason resource.EndReason) {
	s.next.Ended(sub, reason)
}
