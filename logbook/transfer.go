package logbook

import (
	"sync"
	"time"

	"senseboard/clock"
	"senseboard/resource"
)

// DataChunk is how many bytes of a log one notification of a subscription
// to /Mem/Logbook/byId/{LogId}/Data carries at most.
const DataChunk = 512

// DataEnds is how many notifications with no bytes mark the end of a log
// read by subscription: more than one, as the family sends, so that a
// subscriber that misses one still sees the end.
const DataEnds = 2

// dataWindow is how many notifications of one transfer may wait for the
// subscriber at once; the transfer goes on as the subscriber takes them.
const dataWindow = 16

// dataRetry is how long, in device time, a transfer waits before offering
// again a notification that its subscriber had no room for, when the
// subscriber's sink does not tell when it has room (the radio's
// throughput model): a transport's queue calls the transfer back as soon
// as its consumer has taken what waits.
const dataRetry = time.Millisecond

// LogDataNotification is one notification of a subscription to
// /Mem/Logbook/byId/{LogId}/Data: the log's bytes from Offset. Empty bytes,
// with the log's size as Offset, mark the end.
type LogDataNotification struct {
	Offset uint32 `json:"offset"`
	LogData
}

// LogOffset returns Offset: where in the log the notification's bytes
// belong.
func (n *LogDataNotification) LogOffset() uint32 { return n.Offset }

// End reports whether the notification marks the end of the log.
func (n *LogDataNotification) End() bool { return len(n.Data) == 0 }

// dataSource serves subscriptions to a log's data: each subscriber gets
// its own transfer of the whole log, from its first byte.
type dataSource struct{ m *Module }

// transfers are the transfers of one topic (one log), kept in Topic.Data.
type transfers struct {
	mu   sync.Mutex
	data []byte // the log when the first subscriber came
	all  map[*resource.Subscription]*transfer
}

func (s dataSource) Subscribe(t *resource.Topic, req *resource.Request) resource.Response {
	if t.Data != nil { // another subscriber reads this log already: it is there
		t.Limit = dataWindow
		return resource.OK(nil)
	}
	data, resp := s.m.read(req)
	if data == nil {
		return resp
	}
	t.Data = &transfers{data: data, all: map[*resource.Subscription]*transfer{}}
	t.Limit = dataWindow
	return resource.OK(nil)
}

// Announce starts the new subscriber's transfer.
func (s dataSource) Announce(sub *resource.Subscription) {
	ts, _ := sub.Topic.Data.(*transfers)
	if ts == nil {
		return
	}
	x := &transfer{clk: s.m.clock(), sub: sub, data: ts.data}
	x.room = x.pump
	ts.mu.Lock()
	ts.all[sub] = x
	ts.mu.Unlock()
	x.pump()
}

// Unsubscribed stops the transfers whose subscribers left.
func (s dataSource) Unsubscribed(t *resource.Topic) {
	ts, _ := t.Data.(*transfers)
	if ts == nil {
		return
	}
	ts.mu.Lock()
	var gone []*transfer
	for sub, x := range ts.all {
		if !sub.Active() {
			gone = append(gone, x)
			delete(ts.all, sub)
		}
	}
	ts.mu.Unlock()
	for _, x := range gone {
		x.stop()
	}
}

// transfer is one subscriber's read of a log.
type transfer struct {
	clk  clock.Clock // the device's
	sub  *resource.Subscription
	data []byte
	room func() // pump, made once for Offer

	mu      sync.Mutex
	off     int // the next byte to send
	ends    int // end marks sent
	timer   interface{ Stop() bool }
	stopped bool
}

// pump offers notifications until the log and its end marks are sent, or
// the subscriber has no room: then its queue calls it again once its
// consumer has taken what waits, or, when the subscriber's sink cannot
// say, it tries again after dataRetry.
func (x *transfer) pump() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.timer = nil
	if x.stopped || !x.sub.Active() {
		return
	}
	for x.off < len(x.data) || x.ends < DataEnds {
		n := min(DataChunk, len(x.data)-x.off)
		taken, later := x.sub.Offer(&LogDataNotification{Offset: uint32(x.off), LogData: *newLogData(x.data[x.off : x.off+n])}, x.room)
		if !taken {
			if !later {
				x.timer = x.clk.AfterFunc(dataRetry, x.pump)
			}
			return
		}
		if n == 0 {
			x.ends++
		}
		x.off += n
	}
}

func (x *transfer) stop() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stopped = true
	if x.timer != nil {
		x.timer.Stop()
		x.timer = nil
	}
}
