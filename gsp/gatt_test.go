package gsp_test

import (
	"encoding/binary"
	"testing"
	"time"

	"senseboard/gsp"
	"senseboard/radio"
	"senseboard/resource"
	"senseboard/senseboardtest"
)

// The module serves the GSP service of the radio's GATT layer: a central
// that connects, chooses its MTU and switches notifications on gets HELLO,
// GET, a stream and a log over the characteristics.
func TestOverGATT(t *testing.T) {
	d := senseboardtest.New(t, senseboardtest.Config{})
	rc, err := d.BLE.Radio().Connect(radio.NewCentral("AA:BB:CC:00:00:07", "central"), resource.NewQueue(1))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Disconnect()
	if err := rc.SetMTU(64); err != nil {
		t.Fatal(err)
	}
	if err := rc.SetNotify(gsp.DataID, true); err != nil {
		t.Fatal(err)
	}
	write := func(c gsp.Command) {
		t.Helper()
		if err := rc.Write(gsp.CommandID, gsp.AppendCommand(nil, c)); err != nil {
			t.Fatal(err)
		}
	}
	next := func() []byte {
		t.Helper()
		n := <-rc.Notifications()
		if n.Char != gsp.DataID || len(n.Data) > 61 {
			t.Fatalf("notification of %d bytes on %s", len(n.Data), n.Char)
		}
		return n.Data
	}
	response := func(ref uint8) []byte {
		t.Helper()
		for {
			if n := next(); n[0] == gsp.CommandResponse && n[1] == ref {
				return n
			}
		}
	}

	write(gsp.Command{Code: gsp.Hello, Ref: 1})
	if n := response(1); n[2] != gsp.ProtocolVersion {
		t.Fatalf("HELLO % x", n)
	}
	write(gsp.Command{Code: gsp.Get, Ref: 2, Path: "/System/Energy/Level"})
	if n := response(2); status(n) != 200 || len(n) != 5 {
		t.Errorf("energy % x", n)
	}
	write(gsp.Command{Code: gsp.Subscribe, Ref: 3, Path: "/Meas/IMU9/52"})
	if n := response(3); status(n) != 200 {
		t.Fatalf("SUBSCRIBE: %d", status(n))
	}
	parts := map[byte]int{}
	for parts[gsp.DataPart3] == 0 {
		d.Advance(20 * time.Millisecond)
		select {
		case n := <-rc.Notifications():
			if n.Data[1] == 3 {
				parts[n.Data[0]]++
			}
		default:
			time.Sleep(time.Millisecond)
		}
	}
	write(gsp.Command{Code: gsp.Unsubscribe, Ref: 3})
	if n := response(3); status(n) != 200 {
		t.Errorf("UNSUBSCRIBE: %d", status(n))
	}

	// A short log, fetched over the characteristics.
	write(gsp.Command{Code: gsp.PutDataLoggerConfig, Ref: 4, Paths: []string{"/Meas/Acc/13"}})
	if n := response(4); status(n) != 200 {
		t.Fatalf("config: %d", status(n))
	}
	write(gsp.Command{Code: gsp.PutDataLoggerState, Ref: 5, Value: 3})
	response(5)
	d.Advance(2 * time.Second)
	write(gsp.Command{Code: gsp.PutDataLoggerState, Ref: 6, Value: 2})
	response(6)
	write(gsp.Command{Code: gsp.FetchLog, Ref: 7, LogID: 1})
	if n := response(7); status(n) != 200 {
		t.Fatalf("FETCH_LOG: %d", status(n))
	}
	got := 0
	for {
		n := next()
		if n[0] != gsp.Data || n[1] != 7 {
			continue
		}
		if off := int(binary.LittleEndian.Uint32(n[2:])); off != got {
			t.Fatalf("chunk at offset %d, want %d", off, got)
		}
		if len(n) == 6 {
			break
		}
		got += len(n) - 6
	}
	if got < 200 {
		t.Errorf("log of %d bytes for 2 s of Acc at 13 Hz", got)
	}
}
