package phone

import (
	"context"
	"errors"
	"fmt"
	"time"

	"senseboard/gsp/gspwire"
	"senseboard/link"
	"senseboard/radio"
)

// GSP is a client of a device's GATT SensorData Protocol service: its
// writes go to the command characteristic, and the data characteristic's
// notifications to the function OpenGSP was given. A device has one GSP
// client at a time.
type GSP struct {
	d    *peer
	c    *link.Conn
	done func() // ends the use of the device

	notify   func([]byte)
	ended    chan struct{}  // closed by Close: notifications go to sweep
	sweep    chan []byte    // notifications after the end, which cleanUp reads
	released chan struct{}  // closed when the device is free for another client
	subs     map[uint8]bool // references of the client's streams
}

// GSPHandover is how long a new GSP client waits for the device's previous
// one to end before it is refused: a client that disconnects and connects
// again at once finds the device free once the phone has ended the
// previous client's streams.
const GSPHandover = 2 * time.Second

// ErrGSPBusy is a GSP client refused because the device has one.
var ErrGSPBusy = errors.New("has a GSP client already; the bridge serves one at a time")

// gspData is the GSP service's data characteristic.
var gspData = radio.MustParseUUID(gspwire.DataUUID)

// OpenGSP makes a GSP client of a device, waiting up to GSPHandover for
// the one it has to end: it uses the device (connecting to it on demand,
// as any use), chooses the connection's ATT MTU and switches the data
// characteristic's notifications on, which go to notify on the goroutine
// that reads the link; notify must not block for long, as it holds the
// link. Close ends the client.
func (ph *Phone) OpenGSP(ctx context.Context, serial string, mtu int, notify func([]byte)) (*GSP, error) {
	d, err := ph.device(serial)
	if err != nil {
		return nil, err
	}
	g := &GSP{d: d, notify: notify, ended: make(chan struct{}), sweep: make(chan []byte, 64),
		released: make(chan struct{}), subs: map[uint8]bool{}}
	if !d.claimGSP(ctx, g) {
		return nil, fmt.Errorf("device %s %w", serial, ErrGSPBusy)
	}
	g.c, g.done, err = d.use(ctx)
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, ph.cfg.Timeout)
		defer cancel()
		if err = g.c.SetMTU(cctx, mtu); err == nil { // else the link's error names the device
			err = g.c.SetNotify(cctx, gspwire.DataUUID, true)
		}
		if err != nil {
			g.done()
		}
	}
	if err != nil {
		d.releaseGSP(g)
		return nil, err
	}
	return g, nil
}

// claimGSP makes g the device's GSP client, waiting up to GSPHandover for
// the one it has to end; it reports whether g got the device.
func (d *peer) claimGSP(ctx context.Context, g *GSP) bool {
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
		case <-other.released:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// releaseGSP lets the device go once g has ended.
func (d *peer) releaseGSP(g *GSP) {
	d.mu.Lock()
	if d.gsp == g {
		d.gsp = nil
	}
	d.mu.Unlock()
	close(g.released)
}

// gspNotification routes a GATT notification of the device to its GSP
// client; it runs on the link's reading goroutine.
func (d *peer) gspNotification(char radio.UUID, data []byte) {
	if char != gspData {
		return
	}
	d.mu.Lock()
	g := d.gsp
	d.mu.Unlock()
	if g == nil {
		return
	}
	select {
	case <-g.ended:
		select {
		case g.sweep <- data: // for cleanUp
		default:
		}
	default:
		g.notify(data)
	}
}

// Done is closed when the device's connection ends; Err then says why.
func (g *GSP) Done() <-chan struct{} { return g.c.Done() }

// Err says why the device's connection ended, in the words of the link's
// end.
func (g *GSP) Err() string { return linkError(g.c.Err()) }

// Write writes a GSP command to the command characteristic.
func (g *GSP) Write(ctx context.Context, cmd []byte) error {
	ctx, cancel := context.WithTimeout(ctx, g.d.ph.cfg.Timeout)
	defer cancel()
	if err := g.c.WriteChar(ctx, gspwire.CommandUUID, cmd); err != nil {
		return err // the link names the device
	}
	if c, err := gspwire.ParseCommand(cmd); err == nil { // else the device answers with an error and subscribes nothing
		switch c.Code {
		case gspwire.Subscribe:
			g.subs[c.Ref] = true
		case gspwire.Unsubscribe:
			delete(g.subs, c.Ref)
		}
	}
	return nil
}

// Read reads a characteristic of the device, by its UUID ("2a19", or the
// full form); a refusal of the device is a *client.RemoteError.
func (g *GSP) Read(ctx context.Context, char string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, g.d.ph.cfg.Timeout)
	defer cancel()
	return g.c.ReadChar(ctx, char)
}

// Close ends the client as a central's disconnect does: on a connection
// that goes on, its streams are unsubscribed, as the device does when a
// central disconnects; what the device had still to send it (a log being
// fetched, answers that wait for room) is dropped, by switching the
// notifications off and on again; and the notifications are switched off
// once the answers to everything the client wrote have come (a HELLO
// written last answers after them), so that none reaches the next GSP
// client. The data logger keeps logging, as it does on the device. Then
// the phone ends the device's connection at once, unless another client
// holds it (a request under way, a subscription; its idle time does not
// keep it), so that the device advertises again for the next central; and
// the device is free for another GSP client, at once, whatever the client
// left unread.
func (g *GSP) Close() {
	close(g.ended)
	g.cleanUp()
	g.done()
	g.d.releaseNow("released: its GSP client disconnected")
	g.d.releaseGSP(g)
}

func (g *GSP) cleanUp() {
	l := g.c
	select {
	case <-l.Done():
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.d.ph.cfg.Timeout)
	defer cancel()
	for ref := range g.subs {
		if err := l.WriteChar(ctx, gspwire.CommandUUID, gspwire.AppendCommand(nil, gspwire.Command{Code: gspwire.Unsubscribe, Ref: ref})); err != nil {
			g.d.ph.cfg.Log.Info("GSP: unsubscribe", "device", g.d.serial, "ref", ref, "err", err)
		}
	}
	// The device drops what waits for a central that switches the
	// notifications off: else the HELLO below would answer after the rest
	// of a fetch the client walked away from.
	if l.SetNotify(ctx, gspwire.DataUUID, false) != nil || l.SetNotify(ctx, gspwire.DataUUID, true) != nil {
		return
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
