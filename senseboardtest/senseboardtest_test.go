package senseboardtest_test

import (
	"testing"
	"time"

	"senseboard"
	"senseboard/logbook"
	"senseboard/resource"
	"senseboard/senseboardtest"
)

// LogUntil returns the newest log's entry once it holds at least the size
// asked for, with the data logger stopped: the log grows no more as
// device time passes.
func TestLogUntil(t *testing.T) {
	r := senseboardtest.New(t, senseboard.Config{})
	cfg, err := resource.Record("DataLoggerConfig", logbook.Config{DataEntries: logbook.DataEntries{DataEntry: []logbook.DataEntry{{Path: "/Meas/Acc/104"}}}})
	if err != nil {
		t.Fatal(err)
	}
	r.Expect(200, resource.Put, "/Mem/DataLogger/Config", cfg)
	r.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
	const size = 32 << 10
	got := r.LogUntil(size)
	if got.Size < size {
		t.Errorf("the log holds %d bytes; want %d or more", got.Size, size)
	}
	if st := r.Expect(200, resource.Get, "/Mem/DataLogger/State").Content.(resource.Value).Uint(); st != logbook.StateReady {
		t.Errorf("the data logger's state %d; want %d (stopped)", st, logbook.StateReady)
	}
	r.Advance(time.Minute)
	es := r.Expect(200, resource.Get, "/Mem/Logbook/Entries").Content.(*logbook.Entries).Elements
	if newest := es[len(es)-1]; newest != got {
		t.Errorf("the newest log a minute later %+v; want %+v, as LogUntil returned it", newest, got)
	}
}
