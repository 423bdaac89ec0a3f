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
	"senseboard/phone"
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
	serial := r.PathValue("serial")
	if _, err := s.Phone.Device(serial); err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	conn, err := websocket.Accept(w, r, s.acceptOptions())
	if err != nil {
		return // Accept has answered
	}
	conn.SetReadLimit(MaxMessage)
	g := &gspSession{s: s, serial: serial, conn: conn, mtu: mtu, out: make(chan []byte, GSPOutbox),
		dropped: make(chan struct{}), ended: make(chan struct{})}
	g.run(r.Context())
}

// gspSession is one GSP WebSocket client of a device.
type gspSession struct {
	s      *Server
	serial string
	conn   *websocket.Conn
	mtu    int
	gsp    *phone.GSP

	out       chan []byte   // notifications for the client
	dropped   chan struct{} // closed when the client fell behind
	dropOnce  sync.Once
	ended     chan struct{} // closed when the session ends: notifications are dropped
	closeOnce sync.Once
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
	case g.out <- b:
		return
	case <-g.ended:
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

// run makes the device's GSP client and carries the client's writes and
// reads until the client or the connection goes away.
func (g *gspSession) run(ctx context.Context) {
	var err error
	g.gsp, err = g.s.Phone.OpenGSP(ctx, g.serial, g.mtu, g.deliver)
	switch {
	case errors.Is(err, phone.ErrGSPBusy):
		g.close(websocket.StatusTryAgainLater, err.Error())
		g.conn.CloseNow()
		return
	case err != nil:
		g.close(websocket.StatusBadGateway, err.Error())
		g.conn.CloseNow()
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { g.write(ctx) })
	for g.carry(ctx) {
	}
	close(g.ended)
	cancel()
	wg.Wait()
	g.conn.CloseNow()
	g.gsp.Close()
}

// carry reads one message of the client and writes it to the command
// characteristic, or answers a read; it reports whether to go on.
func (g *gspSession) carry(ctx context.Context) bool {
	typ, data, err := g.conn.Read(ctx)
	if err != nil {
		return false
	}
	if typ == websocket.MessageText {
		return g.read(ctx, data)
	}
	if max := g.mtu - 3; len(data) > max {
		g.close(websocket.StatusMessageTooBig, fmt.Sprintf("a write of %d bytes: at MTU %d a write carries at most %d bytes", len(data), g.mtu, max))
		return false
	}
	if err := g.gsp.Write(ctx, data); err != nil {
		g.failed("write", err)
		return false
	}
	return true
}

// failed ends the session after a write or read that did not reach the
// device: with the device's reason when its connection ended (the
// watcher closes with it), else with the error, which names the device.
func (g *gspSession) failed(what string, err error) {
	select {
	case <-g.gsp.Done():
	default:
		g.close(websocket.StatusBadGateway, fmt.Sprintf("%s: %v", what, err))
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
	if err := checkText(b); err != nil {
		return gspRead{}, err
	}
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
func (g *gspSession) read(ctx context.Context, text []byte) bool {
	m, err := parseGSPRead(text)
	if err != nil {
		g.close(websocket.StatusUnsupportedData, gspTextForm+": "+err.Error())
		return false
	}
	data, err := g.gsp.Read(ctx, m.Char)
	a := gspReadAnswer{Op: m.Op, Char: m.Char, Data: data}
	var re *client.RemoteError
	switch {
	case errors.As(err, &re): // the device refused: the client hears why
		a.Data, a.Error = nil, re.Msg
	case err != nil:
		g.failed("read", err)
		return false
	}
	b, _ := json.Marshal(&a)
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	return g.conn.Write(wctx, websocket.MessageText, b) == nil
}

// write sends the notifications to the client; it drops a client that
// falls behind, and exits then or when ctx ends. When the device's
// connection ends it sends what the device sent before (the answer to the
// command that reset it, say: the phone hands it over before the end) and
// then closes with StatusGSPDisconnected.
func (g *gspSession) write(ctx context.Context) {
	send := func(b []byte) bool {
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		defer cancel()
		return g.conn.Write(wctx, websocket.MessageBinary, b) == nil
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.dropped:
			g.s.Log.Warn("dropped a GSP client that does not read", "device", g.serial, "waiting", GSPOutbox)
			g.close(websocket.StatusPolicyViolation, fmt.Sprintf("the client fell %d notifications behind", GSPOutbox))
			return
		case <-g.gsp.Done():
			for len(g.out) > 0 && send(<-g.out) {
			}
			g.close(StatusGSPDisconnected, fmt.Sprintf("device %s: %s", g.serial, g.gsp.Err()))
			return
		case b := <-g.out:
			if !send(b) {
				return
			}
		}
	}
}
