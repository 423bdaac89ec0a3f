package bridge

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"senseboard/phone"
	"senseboard/resource"
)

// OutboxSize is how many messages may wait for a client. A client that
// falls further behind is dropped: it cannot stall the devices or the
// other clients.
const OutboxSize = 1024

// writeTimeout bounds one write to a client.
const writeTimeout = 5 * time.Second

// outbox holds the messages of one client.
type outbox struct {
	ch      chan []byte
	once    sync.Once
	dropped chan struct{} // closed when the client fell OutboxSize behind
}

func newOutbox() *outbox {
	return &outbox{ch: make(chan []byte, OutboxSize), dropped: make(chan struct{})}
}

// put queues a message without blocking.
func (o *outbox) put(b []byte) {
	select {
	case o.ch <- b:
	default:
		o.once.Do(func() { close(o.dropped) })
	}
}

// held is a subscription's events until its response has gone out.
type held struct {
	mu    sync.Mutex
	ready bool
	msgs  [][]byte
	out   *outbox
}

func (h *held) put(b []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.ready {
		if len(h.msgs) < OutboxSize {
			h.msgs = append(h.msgs, b)
		}
		return
	}
	h.out.put(b)
}

// release sends what was held and lets events through from now on.
func (h *held) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, b := range h.msgs {
		h.out.put(b)
	}
	h.msgs, h.ready = nil, true
}

// wsSession is one WebSocket client.
type wsSession struct {
	s    *Server
	conn *websocket.Conn
	out  *outbox

	mu   sync.Mutex
	subs map[ID]*wsSub // by id; sub is nil while subscribing
}

type wsSub struct {
	sub  *phone.Sub
	path string
}

// websocket serves messages over a WebSocket. The handshake refuses pages
// of other origins.
func (s *Server) websocket(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, s.acceptOptions())
	if err != nil {
		return // Accept has answered
	}
	conn.SetReadLimit(MaxMessage)
	ws := &wsSession{s: s, conn: conn, out: newOutbox(), subs: map[ID]*wsSub{}}
	ws.run(r.Context())
}

// run reads and carries out messages, one at a time, in order, until the
// client goes away or falls behind.
func (ws *wsSession) run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { ws.write(ctx, cancel) })
	stop := ws.s.Phone.Watch(&phone.Watcher{
		State: func(st phone.DeviceState) { ws.out.put(deviceJSON(st)) },
		Data:  func(serial, service string, content []byte) { ws.out.put(serviceJSON(serial, service, content)) },
	})
	for _, st := range ws.s.Phone.Devices() {
		ws.out.put(deviceJSON(st))
	}
	for {
		typ, data, err := ws.conn.Read(ctx)
		if err != nil {
			break
		}
		if typ != websocket.MessageText {
			ws.out.put(errorJSON("", fmt.Errorf("%w: send messages as text frames of JSON", ErrBadMessage)))
			continue
		}
		ws.handle(ctx, data)
	}
	stop()
	cancel()
	wg.Wait()
	ws.unsubscribeAll()
	ws.conn.CloseNow()
}

// write sends the outbox's messages. It drops the client when the outbox
// overflows or a write fails, and exits then or when ctx ends.
func (ws *wsSession) write(ctx context.Context, cancel context.CancelFunc) {
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ws.out.dropped:
			ws.s.Log.Warn("dropped a WebSocket client that does not read", "waiting", OutboxSize)
			ws.conn.Close(websocket.StatusPolicyViolation, fmt.Sprintf("the client fell %d messages behind", OutboxSize))
			return
		case b := <-ws.out.ch:
			wctx, wcancel := context.WithTimeout(ctx, writeTimeout)
			err := ws.conn.Write(wctx, websocket.MessageText, b)
			wcancel()
			if err != nil {
				return
			}
		}
	}
}

// handle carries out one message.
func (ws *wsSession) handle(ctx context.Context, data []byte) {
	m, err := ParseMessage(data)
	if err != nil {
		ws.out.put(errorJSON(lenientID(data), err))
		return
	}
	op, _ := m.op()
	switch op {
	case resource.Subscribe:
		ws.subscribe(ctx, m)
	case resource.Unsubscribe:
		ws.unsubscribe(ctx, m)
	default:
		a, err := ws.s.do(ctx, m)
		if err != nil {
			ws.out.put(errorJSON(m.ID, err))
			return
		}
		ws.out.put(answerJSON(m.ID, a))
	}
}

func (ws *wsSession) subscribe(ctx context.Context, m Message) {
	if m.ID == "" {
		m.ID = ID(m.Path)
	}
	ws.mu.Lock()
	if _, dup := ws.subs[m.ID]; dup {
		ws.mu.Unlock()
		ws.out.put(errorJSON(m.ID, fmt.Errorf("%w: id %q names a subscription of this connection already; give each subscription its own id", ErrBadMessage, m.ID)))
		return
	}
	entry := &wsSub{path: m.Path}
	ws.subs[m.ID] = entry
	ws.mu.Unlock()
	h := &held{out: ws.out}
	sub, a, err := ws.s.subscribe(ctx, m, func(e phone.Event) {
		if e.Ended {
			ws.mu.Lock()
			if ws.subs[m.ID] == entry {
				delete(ws.subs, m.ID)
			}
			ws.mu.Unlock()
		}
		h.put(eventJSON(m.ID, &e))
	})
	if sub == nil {
		ws.mu.Lock()
		delete(ws.subs, m.ID)
		ws.mu.Unlock()
	} else {
		ws.mu.Lock()
		entry.sub = sub
		ws.mu.Unlock()
	}
	if err != nil {
		ws.out.put(errorJSON(m.ID, err))
		return
	}
	ws.out.put(answerJSON(m.ID, a))
	h.release()
}

// unsubscribe ends the subscription with the message's id, or else the one
// with its path.
func (ws *wsSession) unsubscribe(ctx context.Context, m Message) {
	ws.mu.Lock()
	id := m.ID
	entry := ws.subs[id]
	if entry == nil && m.Path != "" {
		for sid, e := range ws.subs {
			if strings.EqualFold(strings.Trim(e.path, "/"), strings.Trim(m.Path, "/")) {
				id, entry = sid, e
				break
			}
		}
	}
	if entry != nil && entry.sub != nil {
		delete(ws.subs, id)
	}
	ws.mu.Unlock()
	if entry == nil || entry.sub == nil {
		what := fmt.Sprintf("id %q", m.ID)
		if m.ID == "" {
			what = "path " + m.Path
		}
		ws.out.put(errorJSON(m.ID, fmt.Errorf("%w: no subscription of this connection has %s", ErrBadMessage, what)))
		return
	}
	env, err := entry.sub.Unsubscribe(ctx)
	if err != nil {
		ws.out.put(errorJSON(id, err))
		return
	}
	ws.out.put(answerJSON(id, &Answer{Device: entry.sub.Device(), Envelope: env}))
}

// unsubscribeAll ends the subscriptions of a client that went away.
func (ws *wsSession) unsubscribeAll() {
	ws.mu.Lock()
	var subs []*phone.Sub
	for id, e := range ws.subs {
		if e.sub != nil {
			subs = append(subs, e.sub)
		}
		delete(ws.subs, id)
	}
	ws.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), ws.s.Phone.Timeout())
	defer cancel()
	for _, s := range subs {
		s.Unsubscribe(ctx)
	}
}
