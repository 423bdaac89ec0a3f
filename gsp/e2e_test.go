package gsp_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"senseboard"
	"senseboard/gsp/gspwire"
	"senseboard/sbem"
	"senseboard/senseboardtest"
)

// stream joins DATA and its continuations per reference into payloads.
type stream struct {
	cur      map[uint8][]byte
	payloads map[uint8][][]byte
}

func (s *stream) add(n []byte) {
	ref := n[1]
	switch n[0] {
	case gspwire.Data:
		if c, ok := s.cur[ref]; ok {
			s.payloads[ref] = append(s.payloads[ref], c)
		}
		s.cur[ref] = append([]byte(nil), n[2:]...)
	case gspwire.DataPart2, gspwire.DataPart3:
		s.cur[ref] = append(s.cur[ref], n[2:]...)
	}
}

// TestClientSession runs a client's whole session the way the family's
// clients do, from the public description of the protocol: HELLO, streams
// at several rates, UTC time, offline recording, listing, fetching and
// decoding the log, and clearing the logbook.
func TestClientSession(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	p := connect(t, d, 158)

	hello := p.command(gspwire.Command{Code: gspwire.Hello, Ref: 100})
	if hello[2] != gspwire.ProtocolVersion {
		t.Fatalf("HELLO % x", hello)
	}
	if n := p.command(gspwire.Command{Code: gspwire.PutUTCTime, Ref: 108, Time: 1_763_900_000_000_000}); status(n) != 200 {
		t.Fatalf("PUT_UTCTIME: %d", status(n))
	}
	if n := p.command(gspwire.Command{Code: gspwire.Get, Ref: 101, Path: "/System/Energy/Level"}); status(n) != 200 || len(n) != 5 || n[4] > 100 {
		t.Errorf("energy level % x", n)
	}

	subs := map[uint8]string{1: "/Meas/Acc/13", 2: "/Meas/Acc/104", 3: "/Meas/IMU9/52", 4: "/Meas/IMU9/208", 5: "/Meas/ECG/125", 6: "/Meas/ECG/125/mV", 7: "/Meas/HR"}
	for ref, path := range subs {
		// 200 for every stream, /Meas/HR too, as clients require.
		if n := p.command(gspwire.Command{Code: gspwire.Subscribe, Ref: ref, Path: path}); status(n) != 200 {
			t.Fatalf("SUBSCRIBE %s: %d", path, status(n))
		}
	}
	s := &stream{cur: map[uint8][]byte{}, payloads: map[uint8][][]byte{}}
	for range 50 { // 5 s of device time
		d.Advance(100 * time.Millisecond)
	}
	for ref := range subs {
		if n := p.command(gspwire.Command{Code: gspwire.Unsubscribe, Ref: ref}); status(n) != 200 {
			t.Errorf("UNSUBSCRIBE %d: %d", ref, status(n))
		}
	}
	for len(p.notes) > 0 {
		s.add(<-p.notes)
	}
	samplesOf := func(ref uint8, head, per int) (n int) {
		for _, pl := range s.payloads[ref] {
			if (len(pl)-head)%per != 0 {
				t.Errorf("%s: payload of %d bytes", subs[ref], len(pl))
			}
			n += (len(pl) - head) / per
		}
		return n
	}
	for _, tc := range []struct {
		ref       uint8
		head, per int
		rate      float64
	}{
		{1, 4, 12, 13}, {2, 4, 12, 104}, {3, 4, 36, 52}, {4, 4, 36, 208}, {5, 4, 4, 125}, {6, 4, 2, 125},
	} {
		// About 5 s of samples; the last payload may still be unfinished.
		got, want := float64(samplesOf(tc.ref, tc.head, tc.per)), 5*tc.rate
		if got < want*0.8 || got > want*1.05 {
			t.Errorf("%s: %.0f samples in 5 s, want about %.0f", subs[tc.ref], got, want)
		}
	}
	if len(s.payloads[7]) == 0 && len(s.cur[7]) == 0 {
		t.Error("no heart rate notification in 5 s")
	}

	// Offline recording.
	cfg := gspwire.Command{Code: gspwire.PutDataLoggerConfig, Ref: 102, Paths: []string{"/Meas/Acc/52", "/Meas/ECG/200/mV", "/Time/Detailed"}}
	if n := p.command(cfg); status(n) != 200 {
		t.Fatalf("PUT_DATALOGGER_CONFIG: %d", status(n))
	}
	if n := p.command(gspwire.Command{Code: gspwire.PutDataLoggerState, Ref: 103, Value: 3}); status(n) != 200 {
		t.Fatalf("start logging: %d", status(n))
	}
	if n := p.command(gspwire.Command{Code: gspwire.Get, Ref: 104, Path: "/Mem/DataLogger/State"}); status(n) != 200 || n[4] != 3 {
		t.Errorf("logger state % x", n)
	}
	for range 100 { // 10 s
		d.Advance(100 * time.Millisecond)
	}
	if n := p.command(gspwire.Command{Code: gspwire.PutDataLoggerState, Ref: 104, Value: 2}); status(n) != 200 {
		t.Fatalf("stop logging: %d", status(n))
	}
	n := p.command(gspwire.Command{Code: gspwire.Get, Ref: 109, Path: "/Mem/Logbook/entries"})
	if status(n) != 200 || len(n) < 5 || n[4] != 1 || len(n) != 5+16 {
		t.Fatalf("entries % x", n)
	}
	id := binary.LittleEndian.Uint32(n[5:])
	size := binary.LittleEndian.Uint64(n[13:])

	if n := p.command(gspwire.Command{Code: gspwire.FetchLog, Ref: 110, LogID: id}); status(n) != 200 {
		t.Fatalf("FETCH_LOG: %d", status(n))
	}
	file := make([]byte, size)
	for {
		n := p.next()
		if n[0] != gspwire.Data || n[1] != 110 {
			t.Fatalf("during FETCH_LOG: % x", n[:2])
		}
		off := binary.LittleEndian.Uint32(n[2:])
		if len(n) == 6 {
			if uint64(off) != size {
				t.Errorf("end of log at offset %d, size %d", off, size)
			}
			break
		}
		copy(file[off:], n[6:])
	}
	recs, err := sbem.Decode(file)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, r := range recs {
		for _, v := range r.Values {
			count[v.Path]++
		}
	}
	if c := count["MeasAcc.ArrayAcc.x"]; c < 500 || c > 530 {
		t.Errorf("%d Acc samples in 10 s at 52 Hz", c)
	}
	if c := count["MeasECGmV.Samples"]; c < 1950 || c > 2010 {
		t.Errorf("%d ECG samples in 10 s at 200 Hz", c)
	}
	if count["TimeDetailed.utcTime"] != 1 {
		t.Errorf("%d time records", count["TimeDetailed.utcTime"])
	}
	if n := p.command(gspwire.Command{Code: gspwire.FetchLog, Ref: 111, LogID: id + 1}); status(n) != 404 {
		t.Errorf("FETCH_LOG of a missing log: %d", status(n))
	}
	if n := p.command(gspwire.Command{Code: gspwire.ClearLogbook, Ref: 106}); status(n) != 200 {
		t.Fatalf("CLEAR_LOGBOOK: %d", status(n))
	}
	if n := p.command(gspwire.Command{Code: gspwire.Get, Ref: 109, Path: "/Mem/Logbook/Entries"}); status(n) != 200 || fmt.Sprint(n[4:]) != "[0]" {
		t.Errorf("entries after clearing % x", n)
	}
}
