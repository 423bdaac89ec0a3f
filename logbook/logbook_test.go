package logbook_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"senseboard"
	"senseboard/device"
	"senseboard/logbook"
	"senseboard/nvm"
	"senseboard/profile"
	"senseboard/provider/debug"
	"senseboard/resource"
	"senseboard/sbem"
	"senseboard/senseboardtest"
)

func config(t *testing.T, paths ...string) resource.Value {
	t.Helper()
	c := logbook.Config{DataEntries: logbook.DataEntries{DataEntry: []logbook.DataEntry{}}}
	for _, p := range paths {
		c.DataEntries.DataEntry = append(c.DataEntries.DataEntry, logbook.DataEntry{Path: p})
	}
	v, err := resource.Record("DataLoggerConfig", c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// samples counts decoded values by name.
func samples(t *testing.T, data []byte) map[string]int {
	t.Helper()
	recs, err := sbem.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, r := range recs {
		for _, v := range r.Values {
			n[v.Path]++
		}
	}
	return n
}

func logBytes(t *testing.T, d *senseboardtest.Rig, id uint32) []byte {
	t.Helper()
	env := d.Expect(200, resource.Get, "/Mem/Logbook/byId/{LogId}/Data", resource.Int32(int32(id)))
	return env.Content.(*logbook.LogData).Data
}

func entries(t *testing.T, d *senseboardtest.Rig) []logbook.Entry {
	t.Helper()
	var all []logbook.Entry
	env := d.Expect(200, resource.Get, "/Mem/Logbook/Entries")
	for {
		page := env.Content.(*logbook.Entries).Elements
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		env = d.Expect(200, resource.Get, "/Mem/Logbook/Entries", resource.Uint32(page[len(page)-1].ID))
	}
}

func TestLogRecordsConfiguredStreams(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	d.Expect(200, resource.Put, "/Mem/DataLogger/Config", config(t, "/Meas/IMU9/52", "/Meas/ECG/200/mV", "/Meas/HR", "/Time/Detailed"))
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
	if env := d.Expect(200, resource.Get, "/Mem/DataLogger/State"); env.Content.(resource.Value).Uint() != logbook.StateLogging {
		t.Fatalf("state %v", env.Content)
	}
	d.Expect(403, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
	d.Expect(409, resource.Put, "/Mem/DataLogger/Config", config(t, "/Meas/Acc/13"))
	d.Expect(409, resource.Delete, "/Mem/Logbook/Entries")
	if env := d.Expect(200, resource.Get, "/Mem/Logbook/IsOpen"); !env.Content.(resource.Value).Bool() {
		t.Error("IsOpen false while logging")
	}
	for range 100 {
		d.Advance(100 * time.Millisecond)
	}
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateReady))
	es := entries(t, d)
	if len(es) != 1 || es[0].ID != 1 || es[0].Size < 1000 {
		t.Fatalf("entries %+v", es)
	}
	data := logBytes(t, d, es[0].ID)
	if uint64(len(data)) != es[0].Size {
		t.Errorf("log of %d bytes, entry says %d", len(data), es[0].Size)
	}
	n := samples(t, data)
	// 10 s: 520 IMU samples at 52 Hz, 2000 ECG samples at 200 Hz, one time record.
	if got := n["MeasIMU9.ArrayAcc.x"]; got < 500 || got > 530 || n["MeasIMU9.ArrayMagn.z"] != got {
		t.Errorf("%d IMU9 samples in 10 s at 52 Hz (magn %d)", got, n["MeasIMU9.ArrayMagn.z"])
	}
	if got := n["MeasECGmV.Samples"]; got < 1950 || got > 2020 {
		t.Errorf("%d ECG samples in 10 s at 200 Hz", got)
	}
	if n["TimeDetailed.utcTime"] != 1 || n["MeasHR.average"] < 5 {
		t.Errorf("time records %d, HR records %d", n["TimeDetailed.utcTime"], n["MeasHR.average"])
	}
	desc := d.Expect(200, resource.Get, "/Mem/Logbook/byId/{LogId}/Descriptors", resource.Int32(1)).Content.(*logbook.LogData).Data
	if chunks, _, err := sbem.Chunks(desc); err != nil || len(chunks) == 0 || chunks[0].ID != sbem.DescriptorID {
		t.Errorf("descriptors: %d chunks, %v", len(chunks), err)
	}
	d.Expect(404, resource.Get, "/Mem/Logbook/byId/{LogId}/Data", resource.Int32(7))
	d.Expect(404, resource.Get, "/Mem/Logbook/Entries", resource.Uint32(9))

	// Kept across a restart, then erased.
	d.Restart()
	if es := entries(t, d); len(es) != 1 || string(logBytes(t, d, 1)) != string(data) {
		t.Fatalf("after restart: %+v", es)
	}
	d.Expect(200, resource.Delete, "/Mem/Logbook/Entries")
	if es := entries(t, d); len(es) != 0 {
		t.Fatalf("after DELETE: %+v", es)
	}
}

// Logs are numbered from 1 again once the logbook is erased, also across a
// restart: clients of the GATT SensorData Protocol enumerate logs by
// fetching ids from 1 until the first 404 (movesense-py's datalogger_tool.py).
func TestIDsRestartAfterErase(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	d.Expect(200, resource.Put, "/Mem/DataLogger/Config", config(t, "/Meas/Acc/13"))
	log := func() uint32 {
		d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
		d.Advance(time.Second)
		d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateReady))
		es := entries(t, d)
		return es[len(es)-1].ID
	}
	if a, b := log(), log(); a != 1 || b != 2 {
		t.Fatalf("ids %d, %d; want 1, 2", a, b)
	}
	d.Expect(200, resource.Delete, "/Mem/Logbook/Entries")
	d.Restart()
	if id := log(); id != 1 {
		t.Errorf("first log after the erase and a restart has id %d, want 1", id)
	}
	d.Expect(404, resource.Get, "/Mem/Logbook/byId/{LogId}/Data", resource.Int32(2))
}

func TestBadConfigurations(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	d.Expect(400, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging)) // nothing configured
	d.Expect(400, resource.Put, "/Mem/DataLogger/Config", config(t, "/No/Such/Path"))
	d.Expect(400, resource.Put, "/Mem/DataLogger/Config", config(t, "/a", "/b", "/c", "/d", "/e", "/f", "/g", "/h", "/i"))
	d.Expect(400, resource.Put, "/Mem/DataLogger/State", resource.Uint8(1))
	d.Expect(403, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateReady))
	env := d.Expect(200, resource.Put, "/Mem/DataLogger/Config", config(t, "Meas/Acc/13"))
	b, _ := json.Marshal(env.Content)
	if !strings.Contains(string(b), `"/Meas/Acc/13"`) {
		t.Errorf("config %s", b)
	}
	// The configuration is kept across restarts.
	d.Restart()
	b, _ = json.Marshal(d.Expect(200, resource.Get, "/Mem/DataLogger/Config").Content)
	if !strings.Contains(string(b), `"/Meas/Acc/13"`) {
		t.Errorf("config after restart %s", b)
	}
}

// A configuration holds up to 8 streams, plus the /Time/Detailed that
// clients of the family append to them, each path once.
func TestConfigurationPaths(t *testing.T) {
	eight := []string{"/Meas/Acc/13", "/Meas/Acc/26", "/Meas/Acc/52", "/Meas/Acc/104", "/Meas/Gyro/13", "/Meas/Gyro/26", "/Meas/Gyro/52", "/Meas/HR"}
	d := senseboardtest.New(t, senseboard.Config{})
	for _, tc := range []struct {
		name   string
		paths  []string
		status resource.Status
	}{
		{"eight streams", eight, 200},
		{"eight streams and the time", append(eight[:8:8], "/Time/Detailed"), 200},
		{"nine streams", append(eight[:8:8], "/Meas/Gyro/104"), 400},
		{"nine streams and the time", append(eight[:8:8], "/Meas/Gyro/104", "/Time/Detailed"), 400},
		{"a stream twice", []string{"/Meas/HR", "/meas/hr"}, 400},
		{"the time twice", []string{"/Meas/HR", "/Time/Detailed", "/Time/Detailed"}, 400},
	} {
		if env := d.Do(resource.Put, "/Mem/DataLogger/Config", config(t, tc.paths...)); env.Status != tc.status {
			t.Errorf("%s: %d (%s); want %d", tc.name, env.Status, env.Error, tc.status)
		}
	}
}

// The storage wraps: old logs are erased for new ones; a log that alone
// fills the storage stops with IsFull.
func TestCapacity(t *testing.T) {
	p := profile.Default()
	p.Logbook.Capacity = 8192
	d := senseboardtest.New(t, senseboard.Config{Profile: p})
	d.Expect(200, resource.Put, "/Mem/DataLogger/Config", config(t, "/Meas/Acc/13"))
	for range 4 {
		d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
		for range 10 {
			d.Advance(100 * time.Millisecond)
		}
		d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateReady))
	}
	es := entries(t, d)
	var total uint64
	for _, e := range es {
		total += e.Size
	}
	if len(es) == 0 || es[len(es)-1].ID != 4 || total > 8192 {
		t.Fatalf("entries %+v (%d bytes)", es, total)
	}
	// Fill it with one log.
	d.Expect(200, resource.Put, "/Mem/DataLogger/Config", config(t, "/Meas/IMU9/208"))
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
	for range 50 {
		d.Advance(100 * time.Millisecond)
	}
	if env := d.Expect(200, resource.Get, "/Mem/Logbook/IsFull"); !env.Content.(resource.Value).Bool() {
		t.Error("IsFull false after overflowing the storage")
	}
	if env := d.Expect(200, resource.Get, "/Mem/DataLogger/State"); env.Content.(resource.Value).Uint() != logbook.StateReady {
		t.Errorf("still logging when full: %v", env.Content)
	}
	// The full log keeps what fitted, up to the storage's size.
	es = entries(t, d)
	full := es[len(es)-1]
	if len(es) != 1 || full.Size > 8192 || full.Size < 8192-200 {
		t.Errorf("entries when full %+v, want the full log alone, of nearly 8192 bytes", es)
	}
	if n := samples(t, logBytes(t, d, full.ID)); n["MeasIMU9.ArrayGyro.z"] < 100 {
		t.Errorf("the full log holds %d samples", n["MeasIMU9.ArrayGyro.z"])
	}
}

// A log torn by a crash in the middle of an append is cut back to its last
// whole chunk when the device starts again, and its modification time is
// not earlier than it was before the crash.
func TestTornLogRecovered(t *testing.T) {
	dir := t.TempDir()
	d := senseboardtest.New(t, senseboard.Config{StateDir: dir})
	d.Expect(200, resource.Put, "/Mem/DataLogger/Config", config(t, "/Meas/Acc/52"))
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
	for range 30 {
		d.Advance(100 * time.Millisecond)
	}
	before := entries(t, d)[0].Modified
	// Copy the state as a crash would leave it: flushed data, no close.
	crash := t.TempDir()
	for _, name := range []string{"logbook.json", "datalogger.json"} {
		copyFile(t, filepath.Join(dir, name), filepath.Join(crash, name))
	}
	os.MkdirAll(filepath.Join(crash, "logbook"), 0o700)
	logFile := filepath.Join(dir, "logbook", "00000001.sbem")
	torn := filepath.Join(crash, "logbook", "00000001.sbem")
	copyFile(t, logFile, torn)
	whole, _ := os.ReadFile(torn)
	f, _ := os.OpenFile(torn, os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte{9, 100, 1, 2, 3}) // a chunk cut short
	f.Close()

	d2 := senseboardtest.New(t, senseboard.Config{StateDir: crash})
	es := entries(t, d2)
	if len(es) != 1 || es[0].Size != uint64(len(whole)) {
		t.Fatalf("after the crash: %+v, want one log of %d bytes", es, len(whole))
	}
	if es[0].Modified < before || before < 2 {
		t.Errorf("ModificationTimestamp %d after the crash, %d before; a log's time never goes back", es[0].Modified, before)
	}
	if n := samples(t, logBytes(t, d2, 1)); n["MeasAcc.ArrayAcc.x"] < 100 {
		t.Errorf("%d samples survived", n["MeasAcc.ArrayAcc.x"])
	}
	// New logs take new ids.
	d2.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
	d2.Advance(2 * time.Second)
	d2.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateReady))
	if es := entries(t, d2); len(es) != 2 || es[1].ID != 2 {
		t.Errorf("entries %+v", es)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// The Logbook's states are notified as they change: IsOpen when logging
// starts and stops, IsFull when a log fills the storage and when the logs
// are erased. A log's modification time is the device's UTC time in
// seconds.
func TestStateNotifications(t *testing.T) {
	p := profile.Default()
	p.Logbook.Capacity = 4096
	d := senseboardtest.New(t, senseboard.Config{Profile: p})
	const utc = 1_700_000_000
	d.Expect(200, resource.Put, "/Time", resource.Int64(utc*1_000_000))
	open, full := d.Subscribe("/Mem/Logbook/IsOpen"), d.Subscribe("/Mem/Logbook/IsFull")
	d.Expect(200, resource.Put, "/Mem/DataLogger/Config", config(t, "/Meas/Acc/13"))
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
	d.Advance(2 * time.Second)
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateReady))
	d.Expect(200, resource.Put, "/Mem/DataLogger/Config", config(t, "/Meas/IMU9/208"))
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
	d.Advance(5 * time.Second) // fills the storage, which stops logging
	es := entries(t, d)
	d.Expect(200, resource.Delete, "/Mem/Logbook/Entries")
	d.Advance(time.Second)
	values := func(s *senseboardtest.Sub) string {
		var got []bool
		for _, c := range s.Contents() {
			got = append(got, c.(resource.Value).Bool())
		}
		return fmt.Sprint(got)
	}
	if got, want := values(open), "[true false true false]"; got != want {
		t.Errorf("IsOpen notified %s, want %s", got, want)
	}
	if got, want := values(full), "[true false]"; got != want {
		t.Errorf("IsFull notified %s, want %s", got, want)
	}
	if len(es) != 1 || es[0].Modified < utc || es[0].Modified > utc+10 {
		t.Errorf("entries %+v, want one modified at about %d", es, utc)
	}
}

// A notification too large for one chunk is logged whole, in several.
func TestLargeNotificationsLogged(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	d.Expect(200, resource.Put, "/Mem/DataLogger/Config", config(t, "/Meas/IMU9/208"))
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
	d.Advance(time.Second)
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateReady))
	// 208 samples of each sensor in 1 s, 8 to a notification
	if n := samples(t, logBytes(t, d, 1)); n["MeasIMU9.ArrayAcc.x"] < 200 || n["MeasIMU9.ArrayMagn.z"] != n["MeasIMU9.ArrayAcc.x"] {
		t.Errorf("%d IMU9 samples in 1 s at 208 Hz (magn %d)", n["MeasIMU9.ArrayAcc.x"], n["MeasIMU9.ArrayMagn.z"])
	}
}

// A log whose index cannot be saved when it closes ends with an error: the
// request that stops logging fails with 500, not 200.
func TestStopFailsWhenTheIndexCannotBeSaved(t *testing.T) {
	dir := t.TempDir()
	d := senseboardtest.New(t, senseboard.Config{StateDir: dir})
	d.Expect(200, resource.Put, "/Mem/DataLogger/Config", config(t, "/Meas/Acc/52"))
	d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
	d.Advance(time.Second)
	index := filepath.Join(dir, "logbook.json")
	if err := os.Remove(index); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(index, "in the way"), 0o700); err != nil {
		t.Fatal(err)
	}
	d.Expect(500, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateReady))
}

// A Logbook whose index (logbook.json) is gone or corrupt starts with the
// index rebuilt from the logs: every log listed with its size, its time
// the second of its newest data from its own /Time/Detailed record (0 for
// a log without one), and new logs numbered after them, whatever a
// corrupt index that partly decodes says. A corrupt index is kept aside,
// renamed, not deleted (a second one beside the first), and the device
// warns of it on its debug output, once: not again at a reset.
func TestIndexRebuiltFromLogs(t *testing.T) {
	for _, tt := range []struct {
		name   string
		index  []byte   // what stands in the index's place; nil: nothing
		before []string // files set aside before
		aside  string   // where the corrupt index is kept, "" for none
	}{
		{"deleted", nil, nil, ""},
		{"corrupt", []byte("not an index"), nil, "logbook.json.corrupt"},
		{"corrupt again", nvm.Encode([]byte(`{"nextId": 7, "entries": "none"}`)), []string{"logbook.json.corrupt"}, "logbook.json.corrupt.2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := profile.Default()
			p.Debug.Log = profile.LogArea{Enabled: true, Offset: 2*profile.ChipSize - 4096, Size: 4096}
			d := senseboardtest.New(t, senseboard.Config{StateDir: dir, Profile: p})
			d.Expect(200, resource.Put, "/System/Debug/Config", senseboardtest.Record(t, "DebugMessageConfig", `{"SystemMessages": true, "DebugMessages": false}`))
			d.Expect(200, resource.Put, "/Time", resource.Int64(1_700_000_000_000_000))
			for _, paths := range [][]string{{"/Meas/Acc/52", "/Time/Detailed"}, {"/Meas/Acc/52"}} {
				d.Expect(200, resource.Put, "/Mem/DataLogger/Config", config(t, paths...))
				d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
				for range 35 {
					d.Advance(100 * time.Millisecond)
				}
				d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateReady))
			}
			before := entries(t, d)
			if len(before) != 2 || before[0].Modified < 1_700_000_003 {
				t.Fatalf("entries %+v; want two logs of 3.5 s", before)
			}
			if err := d.Device.Close(); err != nil {
				t.Fatal(err)
			}
			d.Device = nil
			index := filepath.Join(dir, "logbook.json")
			for _, name := range tt.before {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Remove(index); err != nil {
				t.Fatal(err)
			}
			if tt.index != nil {
				if err := os.WriteFile(index, tt.index, 0o600); err != nil {
					t.Fatal(err)
				}
			}

			d = senseboardtest.New(t, senseboard.Config{StateDir: dir, Profile: p})
			got := entries(t, d)
			if len(got) != 2 || got[0].ID != 1 || got[0].Size != before[0].Size || got[1].ID != 2 || got[1].Size != before[1].Size {
				t.Fatalf("entries %+v after the index was rebuilt; want %+v", got, before)
			}
			// the second of the newest data, where the index had that of
			// the write after it
			if m := got[0].Modified; m > before[0].Modified || m+1 < before[0].Modified {
				t.Errorf("log 1 (with /Time/Detailed): time %d, want the %d the index had, or the second before", m, before[0].Modified)
			}
			if m := got[1].Modified; m != 0 {
				t.Errorf("log 2 (without /Time/Detailed): time %d, want 0: nothing tells it", m)
			}
			if _, err := os.Stat(index); err != nil {
				t.Errorf("the rebuilt index: %v", err)
			}
			for _, name := range tt.before {
				if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != name {
					t.Errorf("%s, set aside before: %q, %v", name, b, err)
				}
			}
			// a reset starts the module again: it warns once, at the
			// device's start
			d.Expect(200, resource.Put, "/System/Mode", resource.Uint8(5))
			d.Advance(device.SwitchDelay)
			var warnings []string // of the device's debug log
			if log, ok := d.Do(resource.Get, "/System/Debug/Log").Content.(*debug.LogResult); ok {
				for _, m := range log.Messages {
					if strings.Contains(m.Message, "logbook.json") {
						warnings = append(warnings, m.Level.Name+": "+m.Message)
					}
				}
			}
			if tt.aside == "" {
				if len(warnings) != 0 {
					t.Errorf("warnings %q for an index that was only gone", warnings)
				}
			} else {
				if b, err := os.ReadFile(filepath.Join(dir, tt.aside)); err != nil || string(b) != string(tt.index) {
					t.Errorf("the corrupt index kept as %s: %q, %v; want %q", tt.aside, b, err, tt.index)
				}
				want := "Warning: logbook: the index of the logs logbook.json was corrupt; it is rebuilt from the logs, and the corrupt file kept as " + tt.aside + " ("
				if len(warnings) != 1 || !strings.HasPrefix(warnings[0], want) {
					t.Errorf("warnings %q; want one that starts %q", warnings, want)
				}
			}
			d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateLogging))
			d.Advance(2 * time.Second)
			d.Expect(200, resource.Put, "/Mem/DataLogger/State", resource.Uint8(logbook.StateReady))
			if es := entries(t, d); len(es) != 3 || es[2].ID != 3 {
				t.Errorf("entries %+v after a new log; want it numbered 3", es)
			}
		})
	}
}
