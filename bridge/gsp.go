package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"senseboard/client"
	"senseboard/gsp/gspwire"
	"senseboard/link"
	"senseboard/radio"
)

// DefaultGSPMTU is the ATT MTU of a GSP WebSocket without ?mtu=.
const DefaultGSPMTU = radio.DefaultMTU

// Close codes of the GSP WebSocket besides the standard ones it uses
// (1003 for a text message, 1008 for a client that falls behind, 1009 for
// a write longer than the MTU allows, 1013 while another GSP client holds
// the device, 1014 when the device cannot be reached).
const (
	// StatusGSPDisconnected ends a GSP WebSocket whose device connection
	// ended; the reason says why.
	StatusGSPDisconnected websocket.StatusCode = 4000
)

// GSPOutbox is how many notifications may wait for a GSP client. When it
// is full the bridge holds the radio link for up to writeTimeout (the
// device's notifications wait), then drops the client.
const GSPOutbox = 1024

// gspMTU reads the ?mtu= of a GSP WebSocket; other query parameters than
// mtu and token are refused.
func gspMTU(q url.Values) (int, error) {
	for k := range q {
		if k != "mtu" && k != "token" {
			return 0, fmt.Errorf("%w: unknown query parameter %q; the GSP WebSocket takes mtu (%d..%d, default %d) and token", ErrBadMessage, k, radio.MinMTU, radio.MaxMTU, DefaultGSPMTU)
		}
	}
	vs, ok := q["mtu"]
	if !ok {
		return DefaultGSPMTU, nil
	}
	if len(vs) != 1 {
		return 0, fmt.Errorf("%w: mtu given %d times; give it once, %d..%d", ErrBadMessage, len(vs), radio.MinMTU, radio.MaxMTU)
	}
	mtu, err := strconv.Atoi(vs[0])
	if err != nil || mtu < radio.MinMTU || mtu > radio.MaxMTU {
		return 0, fmt.Errorf("%w: mtu %q: the ATT MTU is a whole number of bytes from %d to %d (default %d)", ErrBadMessage, vs[0], radio.MinMTU, radio.MaxMTU, DefaultGSPMTU)
	}
	return mtu, nil
}

// gspSocket serves the GATT SensorData Protocol of one device over a
// WebSocket: each binary message from the client is one write to the
// command characteristic, each binary message to it one notification of
// the data characteristic; a text message from the client is a read of a
// characteristic, answered with a text message (docs/bridge.md).
func (s *Server) gspSocket(w http.ResponseWriter, r *http.Request) {
	mtu, err := gspMTU(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	d, err := s.Bridge.device(r.PathValue("serial"))
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered
	}
	conn.SetReadLimit(MaxMessage)
	g := &gspSession{d: d, conn: conn, mtu: mtu, out: make(chan []byte, GSPOutbox),
		dropped: make(chan struct{}), ended: make(chan struct{}), done: make(chan struct{}), sweep: make(chan []byte, 64)}
	g.run(r.Context())
}

// gspSession is one GSP WebSocket client of a device.
type gspSession struct {
	d    *device
	conn *websocket.Conn
	mtu  int

	out       chan []byte   // notifications for the client
	dropped   chan struct{} // closed when the client fell behind
	dropOnce  sync.Once
	ended     chan struct{} // closed when the session ends: notifications are dropped
	done      chan struct{} // closed when the device is free for another GSP client
	sweep     chan []byte   // notifications after the end, which cleanUp reads
	closeOnce sync.Once

	subs map[uint8]bool // references of the client's streams; the reading goroutine's
}

// close ends the WebSocket once, with a code and a reason (cut to the 123
// bytes a close frame carries).
func (g *gspSession) close(code websocket.StatusCode, reason string) {
	g.closeOnce.Do(func() { g.conn.Close(code, closeReason(reason)) })
}

// closeReason cuts a reason to the 123 bytes of a close frame, at a
// character boundary.
func closeReason(s string) string {
	const max = 123
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// deliver hands a notification to the client. With the outbox full it
// waits up to writeTimeout, holding the radio link (and so the device's
// notifications), then drops the client.
func (g *gspSession) deliver(b []byte) {
	select {
	case <-g.ended:
		select {
		case g.sweep <- b: // for cleanUp
		default:
		}
		return
	default:
	}
	select {
	case g.out <- b:
		return
	case <-g.dropped:
		return // the client is being dropped: hold nothing for it
	default:
	}
	t := time.NewTimer(writeTimeout)
	defer t.Stop()
	select {
	case g.out <- b:
	case <-g.ended:
	case <-t.C:
		g.dropOnce.Do(func() { close(g.dropped) })
	}
}

// GSPHandover is how long a new GSP client waits for the device's previous
// one to end before it is refused: a client that disconnects and connects
// again at once finds the device free once the bridge has ended the
// previous client's streams.
const GSPHandover = 2 * time.Second

// claimGSP makes g the device's GSP client, waiting up to GSPHandover for
// the one it has to end; it reports whether g got the device.
func (d *device) claimGSP(ctx context.Context, g *gspSession) bool {
	t := time.NewTimer(GSPHandover)
	defer t.Stop()
	for {
		d.mu.Lock()
		other := d.gsp
		if other == nil {
			d.gsp = g
		}
		d.mu.Unlock()
		if other == nil {
			return true
		}
		select {
		case <-other.done:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// releaseGSP lets the device go once g has ended.
func (d *device) releaseGSP(g *gspSession) {
	d.mu.Lock()
	if d.gsp == g {
		d.gsp = nil
	}
	d.mu.Unlock()
	close(g.done)
}

// gspData is the GSP service's data characteristic.
var gspData = radio.MustParseUUID(gspwire.DataUUID)

// gspNotification routes a GATT notification of the device to its GSP
// client; it runs on the link's reading goroutine.
func (d *device) gspNotification(char radio.UUID, data []byte) {
	if char != gspData {
		return
	}
	d.mu.Lock()
	g := d.gsp
	d.mu.Unlock()
	if g != nil {
		g.deliver(data)
	}
}

// run connects to the device (on demand, as any use), chooses the MTU,
// switches the data characteristic's notifications on and carries writes
// until the client or the connection goes away.
func (g *gspSession) run(ctx context.Context) {
	d := g.d
	if !d.claimGSP(ctx, g) {
		g.close(websocket.StatusTryAgainLater, fmt.Sprintf("device %s has a GSP client already; the bridge serves one at a time", d.serial))
		g.conn.CloseNow()
		return
	}
	defer d.releaseGSP(g)
	l, done, err := g.open(ctx)
	if err != nil {
		g.close(websocket.StatusBadGateway, err.Error())
		g.conn.CloseNow()
		return
	}
	defer done()

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { g.write(ctx) })
	wg.Go(func() {
		select {
		case <-l.Done():
			g.close(StatusGSPDisconnected, fmt.Sprintf("device %s: %s", d.serial, linkError(l.Err())))
		case <-ctx.Done():
		}
	})
	g.subs = map[uint8]bool{}
	for g.carry(ctx, l) {
	}
	close(g.ended)
	cancel()
	wg.Wait()
	g.conn.CloseNow()
	g.cleanUp(l)
}

// open connects to the device when needed and prepares its GSP service
// for this client; done ends the use of the device.
func (g *gspSession) open(ctx context.Context) (*link.Conn, func(), error) {
	d := g.d
	l, done, err := d.use(ctx)
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, d.b.cfg.Timeout)
	defer cancel()
	if err = l.SetMTU(cctx, g.mtu); err != nil {
		err = fmt.Errorf("device %s: MTU %d: %w", d.serial, g.mtu, deviceError(d, err))
	} else if err = l.SetNotify(cctx, gspwire.DataUUID, true); err != nil {
		err = fmt.Errorf("device %s: GSP: %w", d.serial, deviceError(d, err))
	}
	if err != nil {
		done()
		return nil, nil, err
	}
	return l, done, nil
}

// carry reads one message of the client and writes it to the command
// characteristic, or answers a read; it reports whether to go on.
func (g *gspSession) carry(ctx context.Context, l *link.Conn) bool {
	typ, data, err := g.conn.Read(ctx)
	if err != nil {
		return false
	}
	if typ == websocket.MessageText {
		return g.read(ctx, l, data)
	}
	if max := g.mtu - 3; len(data) > max {
		g.close(websocket.StatusMessageTooBig, fmt.Sprintf("a write of %d bytes: at MTU %d a write carries at most %d bytes", len(data), g.mtu, max))
		return false
	}
	wctx, cancel := context.WithTimeout(ctx, g.d.b.cfg.Timeout)
	err = l.WriteChar(wctx, gspwire.CommandUUID, data)
	cancel()
	if err != nil {
		g.failed(l, "write", err)
		return false
	}
	g.track(data)
	return true
}

// failed ends the session after a write or read that did not reach the
// device: with the device's reason when its connection ended (the
// watcher closes with it), else with the error.
func (g *gspSession) failed(l *link.Conn, what string, err error) {
	select {
	case <-l.Done():
	default:
		g.close(websocket.StatusBadGateway, fmt.Sprintf("device %s: %s: %v", g.d.serial, what, deviceError(g.d, err)))
	}
}

// gspRead is a text message of the GSP WebSocket: a read of a
// characteristic of the device, by its UUID ("2a19", or the full form).
type gspRead struct {
	Op   string `json:"op"`   // "read"
	Char string `json:"char"` // the characteristic's UUID
}

// gspReadAnswer is the bridge's text message that answers a gspRead: the
// value (base64 in JSON), or the device's error.
type gspReadAnswer struct {
	Op    string `json:"op"`   // "read"
	Char  string `json:"char"` // as the read gave it
	Data  []byte `json:"data"` // null when Error is set
	Error string `json:"error,omitempty"`
}

// gspTextForm is the form of the GSP WebSocket's text messages, as the
// reason of the close that ends a client that sent another begins.
const gspTextForm = `text messages are reads {"op":"read","char":"<uuid>"}`

// parseGSPRead reads a text message of the GSP WebSocket; an error says
// what was wrong, for the reason of the close that ends the client. Its field names
// are matched without regard to case, as in the bridge's messages
// (encoding/json); the op is "read" exactly.
func parseGSPRead(b []byte) (gspRead, error) {
	var m gspRead
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(&m)
	switch {
	case err != nil:
		return gspRead{}, err
	case dec.More():
		return gspRead{}, errors.New("more than one JSON object")
	case m.Op != "read":
		return gspRead{}, fmt.Errorf("op %q: the one op is \"read\"", m.Op)
	case m.Char == "":
		return gspRead{}, errors.New("the characteristic (char) is missing")
	}
	return m, nil
}

// read answers a text message of the client, a read of a characteristic,
// with a gspReadAnswer; it reports whether to go on. A text message that is
// not a read ends the session.
func (g *gspSession) read(ctx context.Context, l *link.Conn, text []byte) bool {
	m, err := parseGSPRead(text)
	if err != nil {
		g.close(websocket.StatusUnsupportedData, gspTextForm+": "+err.Error())
		return false
	}
	rctx, cancel := context.WithTimeout(ctx, g.d.b.cfg.Timeout)
	data, err := l.ReadChar(rctx, m.Char)
	cancel()
	a := gspReadAnswer{Op: m.Op, Char: m.Char, Data: data}
	var re *client.RemoteError
	switch {
	case errors.As(err, &re): // the device refused: the client hears why
		a.Data, a.Error = nil, re.Msg
	case err != nil:
		g.failed(l, "read", err)
		return false
	}
	b, _ := json.Marshal(&a)
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	return g.conn.Write(wctx, websocket.MessageText, b) == nil
}

// track keeps the references of the client's streams.
func (g *gspSession) track(b []byte) {
	cmd, err := gspwire.ParseCommand(b)
	if err != nil {
		return // the device answers it with an error and subscribes nothing
	}
	switch cmd.Code {
	case gspwire.Subscribe:
		g.subs[cmd.Ref] = true
	case gspwire.Unsubscribe:
		delete(g.subs, cmd.Ref)
	}
}

// write sends the notifications to the client; it drops a client that
// falls behind, and exits then or when ctx ends.
func (g *gspSession) write(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.dropped:
			g.d.b.cfg.Log.Warn("dropped a GSP client that does not read", "device", g.d.serial, "waiting", GSPOutbox)
			g.close(websocket.StatusPolicyViolation, fmt.Sprintf("the client fell %d notifications behind", GSPOutbox))
			return
		case b := <-g.out:
			wctx, cancel := context.WithTimeout(ctx, writeTimeout)
			err := g.conn.Write(wctx, websocket.MessageBinary, b)
			cancel()
			if err != nil {
				return
			}
		}
	}
}

// cleanUp ends what the client left running on a connection that goes on:
// its streams are unsubscribed, as the device does when a central
// disconnects, and the notifications switched off once the answers to
// everything the client wrote have come (a HELLO written last answers
// after them), so that none reaches the next GSP client. The data logger
// keeps logging, as it does on the device.
func (g *gspSession) cleanUp(l *link.Conn) {
	select {
	case <-l.Done():
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.d.b.cfg.Timeout)
	defer cancel()
	for ref := range g.subs {
		if err := l.WriteChar(ctx, gspwire.CommandUUID, gspwire.AppendCommand(nil, gspwire.Command{Code: gspwire.Unsubscribe, Ref: ref})); err != nil {
			g.d.b.cfg.Log.Info("GSP: unsubscribe", "device", g.d.serial, "ref", ref, "err", err)
		}
	}
	const ref = 0xFF
	if l.WriteChar(ctx, gspwire.CommandUUID, gspwire.AppendCommand(nil, gspwire.Command{Code: gspwire.Hello, Ref: ref})) == nil {
	wait:
		for {
			select {
			case n := <-g.sweep:
				// HELLO's answer has the protocol version where others have
				// a status, whose low byte is never the version.
				if len(n) > 4 && n[0] == gspwire.CommandResponse && n[1] == ref && n[2] == gspwire.ProtocolVersion {
					break wait
				}
			case <-ctx.Done():
				break wait
			case <-l.Done():
				return
			}
		}
	}
	l.SetNotify(ctx, gspwire.DataUUID, false)
}
