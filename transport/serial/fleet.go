package serial

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"senseboard/wire"
)

// Fleet serves the devices of a program on one TCP listener. The hello of
// each connection names the device it wants by its serial number
// (wire.HelloMsg.Serial); the connection is then a session of that device,
// as on a port of its own, and counts against the device's limit. A hello
// that names no device of the fleet is refused with wire.RefuseSerial.
//
// One listener for the whole fleet, instead of one per device, keeps a
// large fleet within the process's file descriptors: a connected device
// then costs its connection's descriptor alone.
type Fleet struct {
	// Program bounds the fleet's connections together, those that have
	// not said hello yet included; nil for no bound.
	Program *ConnLimit
	// Log receives refused connections and accept errors; nil discards
	// them. Sessions log to their device's Server.Log.
	Log *slog.Logger
	// HelloTimeout and IdleTimeout are as those of Server.
	HelloTimeout, IdleTimeout time.Duration

	servers     map[string]*Server
	first, last string
}

// NewFleet returns a fleet of the devices of servers, each named by its
// device's serial number, which must differ.
func NewFleet(servers []*Server) (*Fleet, error) {
	if len(servers) == 0 {
		return nil, fmt.Errorf("serial: a fleet needs at least one device")
	}
	f := &Fleet{servers: make(map[string]*Server, len(servers))}
	for _, s := range servers {
		serial := s.serial()
		if f.servers[serial] != nil {
			return nil, fmt.Errorf("serial: two devices of the fleet have serial %s; serials must differ", serial)
		}
		f.servers[serial] = s
	}
	f.first, f.last = servers[0].serial(), servers[len(servers)-1].serial()
	return f, nil
}

// Serve accepts connections on ln and serves each as a session of the
// device its hello names, until ctx ends; it returns after every session
// has ended.
func (f *Fleet) Serve(ctx context.Context, ln net.Listener) error {
	return acceptLoop(ctx, ln, f.log(), func(conn net.Conn) {
		if !f.Program.take(TCPConn) {
			refuseConn(ctx, conn, programFull(f.Program), f.HelloTimeout, f.Program, f.log())
			return
		}
		defer f.Program.put(TCPConn)
		f.ServeConn(ctx, conn)
	})
}

// pick finds the device a hello names and counts the connection against
// its limit.
func (f *Fleet) pick(h wire.HelloMsg) (*Server, func(), wire.RefuseCode, error) {
	s := f.servers[h.Serial]
	if s == nil {
		what := "the hello names no device"
		if h.Serial != "" {
			what = fmt.Sprintf("the hello names device %q, which this port does not serve", h.Serial)
		}
		return nil, nil, wire.RefuseSerial, fmt.Errorf("%w: %s; it serves %s: name one in the hello's serial (TCP<host>:<port>/<serial> with wbcmd and the Go client)",
			ErrUnknownSerial, what, f.span())
	}
	release, err := s.admitDevice()
	if err != nil {
		return nil, nil, wire.RefuseLimit, err
	}
	return s, release, "", nil
}

// span says which devices the fleet serves.
func (f *Fleet) span() string {
	if len(f.servers) == 1 {
		return "device " + f.first
	}
	return fmt.Sprintf("%d devices, %s to %s", len(f.servers), f.first, f.last)
}

func (f *Fleet) log() *slog.Logger {
	if f.Log == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return f.Log
}

// ServeConn serves one connection as one session of the device its hello
// names, until it closes or ctx ends. It counts the connection against
// the device's limit, not Program's.
func (f *Fleet) ServeConn(ctx context.Context, conn net.Conn) {
	serveConn(ctx, conn, f.HelloTimeout, f.IdleTimeout, f.pick)
}
