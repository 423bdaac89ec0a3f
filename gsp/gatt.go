package gsp

import (
	"errors"

	"senseboard/gsp/gspwire"
	"senseboard/radio"
	"senseboard/resource"
)

// The GSP service's UUIDs as the radio layer takes them.
var (
	ServiceID = radio.MustParseUUID(gspwire.ServiceUUID)
	CommandID = radio.MustParseUUID(gspwire.CommandUUID)
	DataID    = radio.MustParseUUID(gspwire.DataUUID)
)

// Service returns the module's GATT service for the radio layer: each
// connection of a central gets its own Conn, with the connection's MTU;
// writes to the command characteristic are commands, and the answers are
// notifications of the data characteristic (sent while the central has
// them switched on, as on the hardware).
func (m *Module) Service() *radio.Service {
	return &radio.Service{
		UUID: ServiceID,
		Characteristics: []radio.Characteristic{
			{UUID: CommandID, Props: radio.PropWrite | radio.PropWriteNoResponse},
			{UUID: DataID, Props: radio.PropNotify},
		},
		Open: func(rc *radio.Conn) radio.Handler {
			h := &gattHandler{rc: rc}
			h.c = m.Connect(rc.MTU(), gattLink{rc})
			return h
		},
	}
}

// gattLink carries a connection's notifications as notifications of the
// data characteristic: streams lossy, the rest flow-controlled.
type gattLink struct{ rc *radio.Conn }

// Notify loses the parts when the connection has no room for them; a
// connection that ended counts no loss, as its subscriptions end with it.
func (l gattLink) Notify(sub *resource.Subscription, parts [][]byte) bool {
	ok, err := l.rc.NotifyStream(DataID, sub, parts...)
	return ok || errors.Is(err, radio.ErrDisconnected)
}

// TryNotify reports true also when the connection refuses b for good (it
// ended, or b is longer than its MTU allows): nothing would make room.
func (l gattLink) TryNotify(b []byte) bool {
	ok, err := l.rc.TryNotify(DataID, b)
	return ok || err != nil
}

func (l gattLink) WhenRoom(f func()) { l.rc.WhenRoom(f) }

type gattHandler struct {
	rc *radio.Conn
	c  *Conn
}

func (h *gattHandler) Write(_ radio.UUID, data []byte) error {
	h.c.SetMTU(h.rc.MTU()) // the central may have chosen its MTU since it connected
	h.c.Write(data)
	return nil
}

// Notifying drops what the connection had still to send when the central
// switches the data characteristic's notifications off: a log being
// fetched stops, and the next client of the connection (a phone's next
// app) does not get what the last one left.
func (h *gattHandler) Notifying(char radio.UUID, on bool) {
	if char == DataID && !on {
		h.c.Drop()
	}
}

func (h *gattHandler) Close() { h.c.Close() }
