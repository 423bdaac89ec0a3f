package serial

import (
	"fmt"
	"time"

	bugserial "go.bug.st/serial"
)

// Port is a real serial port the device serves on, for a USB-serial cable
// to another computer.
type Port struct {
	port     bugserial.Port
	name     string
	deadline time.Time
}

// OpenPort opens a serial port at baud bits per second, 8N1, raw.
func OpenPort(name string, baud int) (*Port, error) {
	p, err := bugserial.Open(name, &bugserial.Mode{BaudRate: baud, DataBits: 8, Parity: bugserial.NoParity, StopBits: bugserial.OneStopBit})
	if err != nil {
		return nil, fmt.Errorf("serial port %s: %w", name, err)
	}
	return &Port{port: p, name: name}, nil
}

// Name names the line.
func (p *Port) Name() string { return p.name }

// Read reads until data comes or the deadline passes (then it returns
// os.ErrDeadlineExceeded).
func (p *Port) Read(b []byte) (int, error) {
	if !p.deadline.IsZero() {
		d := time.Until(p.deadline)
		if d <= 0 {
			return 0, errDeadline
		}
		p.port.SetReadTimeout(d)
	}
	n, err := p.port.Read(b)
	if n == 0 && err == nil {
		return 0, errDeadline
	}
	return n, err
}

// Write writes to the port.
func (p *Port) Write(b []byte) (int, error) { return p.port.Write(b) }

// SetReadDeadline sets when a blocked Read gives up.
func (p *Port) SetReadDeadline(t time.Time) error {
	p.deadline = t
	return nil
}

// SetWriteDeadline does nothing: a port's writes drain at its baud rate.
func (p *Port) SetWriteDeadline(time.Time) error { return nil }

// ClientGone cannot tell over a cable: the session ends by Bye or silence.
func (p *Port) ClientGone() bool { return false }

// SessionEnded does nothing: the port has no state of its client's.
func (p *Port) SessionEnded() {}

// Close closes the port.
func (p *Port) Close() error { return p.port.Close() }
