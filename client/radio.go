package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"senseboard/wire"
)

// The methods of this file work on a stream of the radio link (see Open),
// where the client is a central that reaches the device as over the air.
// Their errors are the device's own words, such as "device 000123 is not
// advertising" or "pairing refused by bonding policy BondingOnce".

// radioCall sends a radio frame and decodes the answer into out.
func (c *Conn) radioCall(ctx context.Context, kind wire.Kind, payload, out any) error {
	f, err := c.radioRoundTrip(ctx, kind, payload)
	if err != nil {
		return err
	}
	if out != nil {
		if err := json.Unmarshal(f.Payload, out); err != nil {
			return fmt.Errorf("%s: %s answer: %w", c.port, f.Kind, err)
		}
	}
	return nil
}

// radioRoundTrip sends a radio frame and returns the answer; the device's
// refusal is its *RemoteError as it is.
func (c *Conn) radioRoundTrip(ctx context.Context, kind wire.Kind, payload any) (wire.Frame, error) {
	f, err := c.roundTrip(ctx, kind, payload, nil)
	if err != nil {
		var re *RemoteError
		if errors.As(err, &re) {
			return f, re
		}
	}
	return f, err
}

// Scan returns what the device advertises.
func (c *Conn) Scan(ctx context.Context) (wire.AdvertMsg, error) {
	var m wire.AdvertMsg
	err := c.radioCall(ctx, wire.Scan, nil, &m)
	return m, err
}

// Connect connects as the central with a BLE address and a name; it
// returns the connection handle. Requests go over the connection once it
// is made, and the connection's end closes the stream (Err then says why).
func (c *Conn) Connect(ctx context.Context, address, name string) (uint16, error) {
	m, err := c.ConnectAt(ctx, wire.ConnectMsg{Address: address, Name: name})
	return m.Handle, err
}

// ConnectAt connects as Connect does, as a central that asks for a
// connection interval (m.Interval, units of 1.25 ms; zero leaves it to the
// device); the answer says the handle and the interval granted, the
// nearest within the device's connection parameters.
func (c *Conn) ConnectAt(ctx context.Context, m wire.ConnectMsg) (wire.ConnectedMsg, error) {
	var got wire.ConnectedMsg
	err := c.radioCall(ctx, wire.Connect, &m, &got)
	return got, err
}

// Pair pairs with the device's pass key ("" when it has none) and bonds
// when bond is set; it returns the long-term key of a bond, for Encrypt on
// later connections.
func (c *Conn) Pair(ctx context.Context, passKey string, bond bool) (string, error) {
	var m wire.PairedMsg
	err := c.radioCall(ctx, wire.Pair, &wire.PairMsg{PassKey: passKey, Bond: bond}, &m)
	return m.Key, err
}

// Encrypt encrypts the connection with the long-term key of an earlier bond.
func (c *Conn) Encrypt(ctx context.Context, key string) error {
	return c.radioCall(ctx, wire.Encrypt, &wire.EncryptMsg{Key: key}, nil)
}

// SetHRSNotifications switches the central's heart rate notifications; the
// device's HRS data then arrive through Options.OnRadioData.
func (c *Conn) SetHRSNotifications(ctx context.Context, on bool) error {
	return c.radioCall(ctx, wire.HRSNotify, &wire.HRSNotifyMsg{On: on}, nil)
}

// WriteNUS writes data to the device's serial service.
func (c *Conn) WriteNUS(ctx context.Context, data []byte) error {
	return c.radioCall(ctx, wire.NUSWrite, &wire.NUSMsg{Data: data}, nil)
}

// Disconnect ends the connection and waits until the device has closed
// the stream.
func (c *Conn) Disconnect(ctx context.Context) error {
	if err := c.write(wire.AppendFrame(nil, wire.Disconnect, 0, nil)); err != nil {
		return err
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// GATTServices lists the device's GATT services and their characteristics.
func (c *Conn) GATTServices(ctx context.Context) ([]wire.GATTService, error) {
	var m wire.GATTServicesMsg
	err := c.radioCall(ctx, wire.GATTDiscover, nil, &m)
	return m.Services, err
}

// SetMTU chooses the connection's ATT MTU, 23..517 (247 until chosen).
func (c *Conn) SetMTU(ctx context.Context, mtu int) error {
	return c.radioCall(ctx, wire.GATTMTU, &wire.GATTMTUMsg{MTU: mtu}, nil)
}

// WriteChar writes to a GATT characteristic, named by its UUID.
func (c *Conn) WriteChar(ctx context.Context, char string, data []byte) error {
	return c.radioCall(ctx, wire.GATTWrite, &wire.GATTWriteMsg{Char: char, Data: data}, nil)
}

// ReadChar reads a GATT characteristic, named by its UUID, and returns its
// value.
func (c *Conn) ReadChar(ctx context.Context, char string) ([]byte, error) {
	var m wire.GATTValueMsg
	err := c.radioCall(ctx, wire.GATTRead, &wire.GATTReadMsg{Char: char}, &m)
	return m.Data, err
}

// SetNotify switches the notifications of a GATT characteristic; they
// then arrive through Options.OnRadioData as GATTNotification frames.
func (c *Conn) SetNotify(ctx context.Context, char string, on bool) error {
	return c.radioCall(ctx, wire.GATTNotify, &wire.GATTNotifyMsg{Char: char, On: on}, nil)
}

// Definitions returns the index of the device's interface definitions:
// the built-in files it serves, with the hash of its firmware's whole
// built-in set, and the files its apps added, with their hashes. The
// answer is checked (wire.ParseDefinitions) and is an index.
func (c *Conn) Definitions(ctx context.Context) (wire.DefinitionsMsg, error) {
	m, err := c.definitions(ctx, &wire.DefinitionsRequestMsg{})
	if err == nil && m.Builtin == nil {
		err = fmt.Errorf("%s: %s answer: %w: a file where the index was asked for", c.port, wire.DefinitionsData, wire.ErrDefinitions)
	}
	return m, err
}

// DefinitionFile returns the text of one of the device's definition files,
// checked against its hash.
func (c *Conn) DefinitionFile(ctx context.Context, name string) (wire.DefinitionFile, error) {
	m, err := c.definitions(ctx, &wire.DefinitionsRequestMsg{File: name})
	if err != nil {
		return wire.DefinitionFile{}, err
	}
	if m.File == nil || m.File.Name != name {
		return wire.DefinitionFile{}, fmt.Errorf("%s: %s answer: %w: not the file %s", c.port, wire.DefinitionsData, wire.ErrDefinitions, name)
	}
	return *m.File, nil
}

func (c *Conn) definitions(ctx context.Context, req *wire.DefinitionsRequestMsg) (wire.DefinitionsMsg, error) {
	f, err := c.radioRoundTrip(ctx, wire.Definitions, req)
	if err != nil {
		return wire.DefinitionsMsg{}, err
	}
	m, err := wire.ParseDefinitions(f.Payload)
	if err != nil {
		return m, fmt.Errorf("%s: %s answer: %w", c.port, f.Kind, err)
	}
	return m, nil
}
