package link

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"senseboard/client"
	"senseboard/radio"
	"senseboard/resource"
	"senseboard/wire"
)

// Central is a central's side of the radio link, as a phone's Bluetooth:
// its identity, the connection interval it asks for, and how its streams
// are read. Its zero value is a central without an address or a name,
// which leaves the interval to each device.
type Central struct {
	// Address is the central's BLE address (XX:XX:XX:XX:XX:XX), which
	// devices see in /Comm/Ble/Peers and their bonding policies judge.
	Address string
	// Name names the central to devices and in its hellos.
	Name string
	// Interval is the connection interval the central asks for when it
	// connects, as a phone chooses one (7.5 ms to 4 s in steps of 1.25 ms,
	// as radio.IntervalUnits checks); each device grants the nearest
	// within its connection parameters. Zero leaves it to the device: its
	// slowest.
	Interval time.Duration
	// Timeout bounds the hello and each exchange; 5 s when zero.
	Timeout time.Duration
	// ReadBuffer and Push tune how the streams are read (client.Options).
	ReadBuffer int
	Push       bool

	power atomic.Uint32 // the Bluetooth's power cycles (PowerCycle)
}

// PowerCycle counts a turning off and on of the central's Bluetooth,
// which it tells the devices it scans and connects to from now: a device
// stuck with it (radio.Peripheral.Stick) is reachable again.
func (c *Central) PowerCycle() { c.power.Add(1) }

// Power returns how many times the central's Bluetooth was turned off and
// on.
func (c *Central) Power() uint32 { return c.power.Load() }

// Handlers receive what a device sends of its own over a connection, on
// the goroutine that reads the stream; they must not block, and may be
// nil.
type Handlers struct {
	// HeartRate receives the heart rate service's notifications as the
	// device sends them: {"average": ..., "rrData": [...]}.
	HeartRate func(payload []byte)
	// Serial receives the serial service's data.
	Serial func(data []byte)
	// Notification receives the notifications of the characteristics
	// switched on with SetNotify.
	Notification func(char radio.UUID, data []byte)
}

// ErrDisconnected is the end of a connection; the error is a
// *DisconnectedError.
var ErrDisconnected = errors.New("disconnected")

// DisconnectedError is the end of a connection, with the device's reason,
// such as "the device reset".
type DisconnectedError struct {
	Port   string
	Reason string
}

func (e *DisconnectedError) Error() string { return e.Port + ": disconnected: " + e.Reason }

// Is makes a DisconnectedError ErrDisconnected.
func (e *DisconnectedError) Is(target error) bool { return target == ErrDisconnected }

// Conn is a central's stream of the radio link to one device: a session
// of the line protocol (client.Conn: its requests and subscriptions go
// over the connection once it is made, and its end closes the stream, Err
// then saying why) and the radio's operations. Their errors name the
// device once, by the stream's name: a refusal of the radio's operations
// is the device's own words, a *client.RemoteError, such as "device 000123
// is not advertising" or "device 000123: pairing refused by bonding policy
// BondingOnce"; an answer that the device holds no session for the stream
// is client.ErrNoSession too, as on the line protocol.
type Conn struct {
	*client.Conn
	central *Central
	name    string
}

// Open starts a stream that is open already, rw, which the Conn owns and
// closes: it says hello. name names the stream in errors ("device
// 000123"); h receives what the device sends of its own.
func (c *Central) Open(ctx context.Context, name string, rw io.ReadWriteCloser, h Handlers) (*Conn, error) {
	l := &Conn{central: c, name: name}
	cc, err := client.Open(ctx, name, rw, &client.Options{Timeout: c.Timeout, Name: c.Name, ReadBuffer: c.ReadBuffer,
		Push: c.Push, OnFrame: func(f wire.Frame) error { return l.received(f, h) }})
	if err != nil {
		return nil, err
	}
	l.Conn = cc
	return l, nil
}

// received hands a frame the device sent of its own to its handler; a
// Disconnected ends the connection.
func (l *Conn) received(f wire.Frame, h Handlers) error {
	switch f.Kind {
	case HRSData:
		if h.HeartRate != nil {
			h.HeartRate(f.Payload)
		}
	case NUSData:
		var m NUSMsg
		if h.Serial != nil && json.Unmarshal(f.Payload, &m) == nil {
			h.Serial(m.Data)
		}
	case GATTNotification:
		if char, value, err := ParseNotification(f.Payload); err == nil && h.Notification != nil {
			h.Notification(char, value)
		}
	case Disconnected:
		var m DisconnectedMsg
		json.Unmarshal(f.Payload, &m)
		return &DisconnectedError{Port: l.name, Reason: strings.TrimPrefix(m.Reason, "disconnected: ")}
	}
	return nil
}

// answers are the kinds of frame that answer those a central sends.
var answers = map[wire.Kind]wire.Kind{Scan: Advert, Connect: Connected, Pair: Paired, Encrypt: Paired,
	HRSNotify: Ack, NUSWrite: Ack, GATTDiscover: GATTServices, GATTMTU: Ack, GATTWrite: Ack, GATTNotify: Ack,
	GATTRead: GATTValue, Definitions: DefinitionsData}

// call sends a frame of the radio link and decodes the answer into out;
// the device's refusal is its *client.RemoteError, named as refused.
func (l *Conn) call(ctx context.Context, kind wire.Kind, payload, out any) error {
	f, err := l.roundTrip(ctx, kind, payload)
	if err == nil && out != nil {
		if err := json.Unmarshal(f.Payload, out); err != nil {
			return fmt.Errorf("%s: %s answer: %w", l.name, KindName(f.Kind), err)
		}
	}
	return err
}

// roundTrip sends a frame of the radio link with a JSON payload (none when
// nil) and returns the answer; the device's refusal is its
// *client.RemoteError, named as refused, unless it is the line protocol's
// client.ErrNoSession, which the connection's error names already.
func (l *Conn) roundTrip(ctx context.Context, kind wire.Kind, payload any) (wire.Frame, error) {
	var b []byte
	if payload != nil {
		var err error
		if b, err = resource.AppendJSON(nil, payload); err != nil {
			return wire.Frame{}, err
		}
	}
	f, err := l.Call(ctx, kind, b, answers[kind])
	var re *client.RemoteError
	if errors.As(err, &re) && !errors.Is(err, client.ErrNoSession) {
		return f, refused(l.name, re)
	}
	return f, err
}

// refused names the device of a connection in its refusal, as every other
// error of the connection names it (the stream's name, "device 000123"),
// unless the device's words name it already ("device 000123 is not
// advertising", as the radio refuses a connection).
func refused(name string, re *client.RemoteError) error {
	if rest, ok := strings.CutPrefix(re.Msg, name); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, ":")) {
		return re
	}
	return fmt.Errorf("%s: %w", name, re)
}

// Scan returns what the device advertises.
func (l *Conn) Scan(ctx context.Context) (AdvertMsg, error) {
	var m AdvertMsg
	var who any // an anonymous central's scan carries nothing, as before ScanMsg
	if l.central.Address != "" {
		who = &ScanMsg{Address: l.central.Address, Power: l.central.Power()}
	}
	err := l.call(ctx, Scan, who, &m)
	return m, err
}

// Connect connects as the central, asking for its connection interval;
// the answer says the handle and the interval granted, the nearest within
// the device's connection parameters.
func (l *Conn) Connect(ctx context.Context) (ConnectedMsg, error) {
	units, err := radio.IntervalUnits(l.central.Interval)
	if err != nil {
		return ConnectedMsg{}, err
	}
	var got ConnectedMsg
	err = l.call(ctx, Connect, &ConnectMsg{Address: l.central.Address, Name: l.central.Name, Interval: units, Power: l.central.Power()}, &got)
	return got, err
}

// Pair pairs with the device's pass key ("" when it has none) and bonds
// when bond is set; it returns the long-term key of a bond, for Encrypt on
// later connections.
func (l *Conn) Pair(ctx context.Context, passKey string, bond bool) (string, error) {
	var m PairedMsg
	err := l.call(ctx, Pair, &PairMsg{PassKey: passKey, Bond: bond}, &m)
	return m.Key, err
}

// Encrypt encrypts the connection with the long-term key of an earlier bond.
func (l *Conn) Encrypt(ctx context.Context, key string) error {
	return l.call(ctx, Encrypt, &EncryptMsg{Key: key}, nil)
}

// SetHRSNotifications switches the central's heart rate notifications; the
// device's HRS data then arrive through Handlers.HeartRate.
func (l *Conn) SetHRSNotifications(ctx context.Context, on bool) error {
	return l.call(ctx, HRSNotify, &HRSNotifyMsg{On: on}, nil)
}

// WriteNUS writes data to the device's serial service.
func (l *Conn) WriteNUS(ctx context.Context, data []byte) error {
	return l.call(ctx, NUSWrite, &NUSMsg{Data: data}, nil)
}

// Disconnect ends the connection and waits until the device has closed
// the stream; when ctx ends first, its error, naming the device, wraps
// ctx.Err().
func (l *Conn) Disconnect(ctx context.Context) error {
	if err := l.Send(Disconnect, nil); err != nil {
		return err
	}
	select {
	case <-l.Done():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", l.name, ctx.Err())
	}
}

// GATTServices lists the device's GATT services and their characteristics.
func (l *Conn) GATTServices(ctx context.Context) ([]GATTService, error) {
	var m GATTServicesMsg
	err := l.call(ctx, GATTDiscover, nil, &m)
	return m.Services, err
}

// SetMTU chooses the connection's ATT MTU, 23..517 (247 until chosen).
func (l *Conn) SetMTU(ctx context.Context, mtu int) error {
	return l.call(ctx, GATTMTU, &GATTMTUMsg{MTU: mtu}, nil)
}

// WriteChar writes to a GATT characteristic, named by its UUID.
func (l *Conn) WriteChar(ctx context.Context, char string, data []byte) error {
	return l.call(ctx, GATTWrite, &GATTWriteMsg{Char: char, Data: data}, nil)
}

// ReadChar reads a GATT characteristic, named by its UUID, and returns its
// value.
func (l *Conn) ReadChar(ctx context.Context, char string) ([]byte, error) {
	var m GATTValueMsg
	err := l.call(ctx, GATTRead, &GATTReadMsg{Char: char}, &m)
	return m.Data, err
}

// SetNotify switches the notifications of a GATT characteristic; they
// then arrive through Handlers.Notification.
func (l *Conn) SetNotify(ctx context.Context, char string, on bool) error {
	return l.call(ctx, GATTNotify, &GATTNotifyMsg{Char: char, On: on}, nil)
}

// Definitions returns the index of the device's interface definitions:
// the built-in files it serves, with the hash of its firmware's whole
// built-in set, and the files its apps added, with their hashes. The
// answer is checked (ParseDefinitions) and is an index.
func (l *Conn) Definitions(ctx context.Context) (DefinitionsMsg, error) {
	m, err := l.definitions(ctx, &DefinitionsRequestMsg{})
	if err == nil && m.Builtin == nil {
		err = fmt.Errorf("%s: %s answer: %w: a file where the index was asked for", l.name, KindName(DefinitionsData), ErrDefinitions)
	}
	return m, err
}

// DefinitionFile returns the text of one of the device's definition files,
// checked against its hash.
func (l *Conn) DefinitionFile(ctx context.Context, name string) (DefinitionFile, error) {
	m, err := l.definitions(ctx, &DefinitionsRequestMsg{File: name})
	if err != nil {
		return DefinitionFile{}, err
	}
	if m.File == nil || m.File.Name != name {
		return DefinitionFile{}, fmt.Errorf("%s: %s answer: %w: not the file %s", l.name, KindName(DefinitionsData), ErrDefinitions, name)
	}
	return *m.File, nil
}

func (l *Conn) definitions(ctx context.Context, req *DefinitionsRequestMsg) (DefinitionsMsg, error) {
	f, err := l.roundTrip(ctx, Definitions, req)
	if err != nil {
		return DefinitionsMsg{}, err
	}
	m, err := ParseDefinitions(f.Payload)
	if err != nil {
		return m, fmt.Errorf("%s: %s answer: %w", l.name, KindName(f.Kind), err)
	}
	return m, nil
}
