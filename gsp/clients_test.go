package gsp_test

// Third-party clients of the sensor family, replayed byte for byte against
// the GSP module. Each test writes the commands a client writes, in its
// order, with its references and path spellings, and checks the answers the
// way that client decodes and checks them. The clients were read, not
// copied; each expectation names the file it comes from.

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"

	"senseboard"
	"senseboard/gsp"
	"senseboard/gsp/gspwire"
	"senseboard/profile"
	"senseboard/sbem"
	"senseboard/senseboardtest"
)

// central is a GATT central with notifications on: the bytes it writes and
// every notification it gets, as a BLE client sees them.
type central struct {
	*peer
	data [][]byte // notifications other than command responses, in order
}

func newCentral(t *testing.T, d *senseboardtest.Rig) *central {
	return &central{peer: connect(t, d, gspwire.DefaultMTU)}
}

// first writes cmd and returns the first notification that follows.
// movesense-py's sensor_command.py (send_command) drains its queue, writes,
// and takes whatever comes next as the answer, so with no stream running
// the answer must be the very next notification.
func (c *central) first(cmd []byte) []byte {
	c.t.Helper()
	c.conn.Write(cmd)
	return c.next()
}

// answer writes cmd and returns the COMMAND_RESPONSE with its reference,
// keeping the data notifications that come before it (the routing of
// movesense-py's src/movesense/sensor.py and Commander's client.ts).
func (c *central) answer(cmd []byte) []byte {
	c.t.Helper()
	c.conn.Write(cmd)
	for {
		n := c.next()
		if n[0] == gspwire.CommandResponse && n[1] == cmd[1] {
			return n
		}
		c.data = append(c.data, n)
	}
}

// settle lets the device run for dt and collects what the streams sent.
func (c *central) settle(d *senseboardtest.Rig, dt time.Duration) {
	for t := time.Duration(0); t < dt; t += 100 * time.Millisecond {
		d.Advance(100 * time.Millisecond)
	}
	hello := c.answer([]byte{byte(gspwire.Hello), 254}) // what came before the HELLO answer is in
	_ = hello
}

func u16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }
func u32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
func f32(b []byte) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b))
}

func cmdPath(code gspwire.Code, ref uint8, path string, nul bool) []byte {
	b := append([]byte{byte(code), ref}, path...)
	if nul {
		b = append(b, 0)
	}
	return b
}

// pyStatus is how movesense-py reads a COMMAND_RESPONSE
// (src/movesense/sensor.py, _notification_handler): at least 4 bytes; on
// the HELLO reference the status is taken as 200 and the data starts at
// byte 2, else the status is the uint16 at byte 2 and the data starts at 4.
func pyStatus(t *testing.T, n []byte, helloRef uint8) (uint16, []byte) {
	t.Helper()
	if n[0] != gspwire.CommandResponse || len(n) < 4 {
		t.Fatalf("movesense-py wants a COMMAND_RESPONSE of at least 4 bytes, got % x", n)
	}
	if n[1] == helloRef {
		return 200, n[2:]
	}
	return u16(n[2:]), n[4:]
}

// pyFetch replays fetch_data of movesense-py (sensor_command.py and
// src/movesense/sensor.py): FETCH_LOG on reference 101 with a uint32 log id;
// the first notification must be a COMMAND_RESPONSE with 200; then DATA or
// DATA_PART2 notifications of [offset uint32, bytes], each written at its
// offset, until one with no bytes.
func pyFetch(t *testing.T, c *central, id uint32) (status uint16, file []byte) {
	t.Helper()
	n := c.first(binary.LittleEndian.AppendUint32([]byte{byte(gspwire.FetchLog), 101}, id))
	if status, _ = pyStatus(t, n, 100); status != 200 {
		return status, nil
	}
	for {
		n := c.next()
		if n[0] != gspwire.Data && n[0] != gspwire.DataPart2 {
			t.Fatalf("FETCH_LOG %d: notification % x; movesense-py reads only DATA and DATA_PART2 here", id, n[:2])
		}
		p := n[2:]
		if len(p) < 4 {
			t.Fatalf("FETCH_LOG %d: data packet of %d bytes; movesense-py stops at one shorter than 4", id, len(p))
		}
		off, body := int(u32(p)), p[4:]
		if len(body) == 0 {
			return 200, file
		}
		if need := off + len(body); need > len(file) {
			file = append(file, make([]byte, need-len(file))...)
		}
		copy(file[off:], body)
	}
}

// TestMovesensePyClient replays the command-line tools of movesense-py
// (sensein/movesense-py: datalogger_tool.py with sensor_command.py, and
// src/movesense/cli.py with src/movesense/sensor.py). Every tool command is
// one connection: notifications on, PUT_UTCTIME (except fetch and erase),
// the command, notifications off, disconnect.
//
// movesense-py reads /Meas/Temp with the Measurement first (protocol.py,
// parse_subscription_packet), the other way round from current sensors:
// the device runs on a profile with binary.tempOrder measurementFirst, the
// setting for that client (docs/gsp.md).
func TestMovesensePyClient(t *testing.T) {
	p := profile.Default()
	p.Binary.TempOrder = profile.TempMeasurementFirst
	d := senseboardtest.New(t, senseboard.Config{Profile: p})
	utc := uint64(1_763_900_000_000_000)
	session := func(setTime bool) *central {
		c := newCentral(t, d)
		if setTime { // set_utc_time: [8, 108, uint64 µs], success is 200
			n := c.first(binary.LittleEndian.AppendUint64([]byte{byte(gspwire.PutUTCTime), 108}, utc))
			if st, _ := pyStatus(t, n, 100); st != 200 {
				t.Fatalf("PUT_UTCTIME: %d, movesense-py wants 200", st)
			}
		}
		return c
	}
	end := func(c *central) { c.conn.Close() }

	// status: get_status (HELLO on reference 100, then GET on 101 of
	// "/Mem/DataLogger/State" without a NUL) and, in cli.py, the battery.
	c := session(true)
	st, data := pyStatus(t, c.first([]byte{byte(gspwire.Hello), 100}), 100)
	if st != 200 || len(data) < 5 {
		t.Fatalf("HELLO: status %d, %d bytes; get_status wants at least 5", st, len(data))
	}
	f := strings.Split(string(data[1:]), "\x00")
	if len(f) < 5 || f[0] != d.Device.Profile().Serial || f[4] != gsp.FirmwareVersion {
		t.Errorf("HELLO strings %q: serial, product, DFU address, app name, app version", f)
	}
	st, data = pyStatus(t, c.first(cmdPath(gspwire.Get, 101, "/Mem/DataLogger/State", false)), 100)
	if st != 200 || len(data) != 1 || data[0] < 1 || data[0] > 3 {
		t.Fatalf("GET /Mem/DataLogger/State: %d % x; DL_STATES has 1, 2, 3", st, data)
	}
	st, data = pyStatus(t, c.first(cmdPath(gspwire.Get, 105, "/System/Energy/Level", true)), 100)
	if st != 200 || len(data) != 1 || data[0] > 100 {
		t.Fatalf("battery: %d % x, want 200 and one byte of percent", st, data)
	}
	end(c)

	// erasemem: CLEAR_LOGBOOK on 106, success is 200.
	c = session(false)
	if st, _ := pyStatus(t, c.first([]byte{byte(gspwire.ClearLogbook), 106}), 100); st != 200 {
		t.Fatalf("CLEAR_LOGBOOK: %d", st)
	}
	end(c)

	// config: the paths as given, each NUL-terminated, with /Time/Detailed
	// appended; capture_validation.py spells ECG "/Meas/Ecg/200/mV".
	c = session(true)
	cfg := []byte{byte(gspwire.PutDataLoggerConfig), 102}
	for _, p := range []string{"/Meas/Ecg/200/mV", "/Meas/Acc/52", "/Time/Detailed"} {
		cfg = append(append(cfg, p...), 0)
	}
	if st, _ := pyStatus(t, c.first(cfg), 100); st != 200 {
		t.Fatalf("PUT_DATALOGGER_CONFIG: %d", st)
	}
	end(c)

	// start: cli.py reads the state first and starts unless it is 3.
	c = session(true)
	c.first([]byte{byte(gspwire.Hello), 100})
	if _, data := pyStatus(t, c.first(cmdPath(gspwire.Get, 101, "/Mem/DataLogger/State", false)), 100); data[0] != 2 {
		t.Fatalf("state before start: %d, want 2 READY", data[0])
	}
	if st, _ := pyStatus(t, c.first([]byte{byte(gspwire.PutDataLoggerState), 103, 3}), 100); st != 200 {
		t.Fatalf("start logging: %d", st)
	}
	end(c)
	for range 50 { // 5 s of logging
		d.Advance(100 * time.Millisecond)
	}

	// stop: state 2 on 104 (200), then PUT_SYSTEMMODE 5 on 107: sensor.py
	// counts only 202 as success, cli.py takes 200 or 202. The device resets.
	c = session(true)
	if st, _ := pyStatus(t, c.first([]byte{byte(gspwire.PutDataLoggerState), 104, 2}), 100); st != 200 {
		t.Fatalf("stop logging: %d", st)
	}
	if st, _ := pyStatus(t, c.first([]byte{byte(gspwire.PutSystemMode), 107, 5}), 100); st != 202 {
		t.Fatalf("PUT_SYSTEMMODE 5: %d; movesense-py's sensor.py wants 202", st)
	}
	end(c)
	d.Advance(4 * time.Second) // cli.py waits 4 s for the reset

	// fetch (cli.py _fetch): state must not be 3; the listing on 109 is
	// "/Mem/Logbook/entries" with a NUL, parsed from the whole notification
	// after a 5-byte header, 16 bytes an entry; then FETCH_LOG per entry.
	c = session(false)
	c.first([]byte{byte(gspwire.Hello), 100})
	if _, data := pyStatus(t, c.first(cmdPath(gspwire.Get, 101, "/Mem/DataLogger/State", false)), 100); data[0] == 3 {
		t.Fatal("still logging after stop and reset")
	}
	n := c.first(cmdPath(gspwire.Get, 109, "/Mem/Logbook/entries", true))
	if st, _ := pyStatus(t, n, 100); st != 200 || len(n) < 5 || (len(n)-5)%16 != 0 {
		t.Fatalf("listing: % x; parse_logbook_entries wants 200, a 5-byte header and 16-byte entries", n)
	}
	if len(n) != 5+16 || u32(n[5:]) != 1 {
		t.Fatalf("listing after erase and one log: % x, want one entry with id 1", n[5:])
	}
	size := binary.LittleEndian.Uint64(n[13:])
	st, file := pyFetch(t, c, 1)
	if st != 200 || uint64(len(file)) != size {
		t.Fatalf("FETCH_LOG 1: status %d, %d bytes, the listing says %d", st, len(file), size)
	}
	recs, err := sbem.Decode(file)
	if err != nil {
		t.Fatalf("the fetched log is not SBEM: %v", err)
	}
	count := map[string]int{}
	for _, r := range recs {
		for _, v := range r.Values {
			count[v.Path]++
		}
	}
	// sbem2json names the file's streams after their canonical paths
	// (log_..._MeasECGmV.csv), whatever the spelling in the configuration.
	if c := count["MeasECGmV.Samples"]; c < 900 || c > 1010 {
		t.Errorf("%d ECG samples in 5 s at 200 Hz; streams %v", c, count)
	}
	if c := count["MeasAcc.ArrayAcc.x"]; c < 230 || c > 265 {
		t.Errorf("%d Acc samples in 5 s at 52 Hz", c)
	}
	// datalogger_tool.py fetch: ids from 1 up until the first 404.
	if st, _ := pyFetch(t, c, 2); st != 404 {
		t.Errorf("FETCH_LOG 2: %d, datalogger_tool.py stops at 404", st)
	}
	end(c)

	// live (cli.py _live, capture_validation.py): SUBSCRIBE with a NUL on
	// references from 10 (or 30); success is 200 alone, for HR too, whose
	// notifications the real sensor sends (the fixture holds one).
	c = session(true)
	paths := map[uint8]string{10: "/Meas/Ecg/200/mV", 11: "/Meas/Acc/52", 12: "/Meas/IMU9/52", 13: "/Meas/HR", 14: "/Meas/Temp", 15: "/Meas/IMU6/52"}
	for ref := uint8(10); ref <= 15; ref++ {
		if st, _ := pyStatus(t, c.answer(cmdPath(gspwire.Subscribe, ref, paths[ref], true)), 100); st != 200 {
			t.Fatalf("SUBSCRIBE %s: %d; subscribe_to_resource wants 200", paths[ref], st)
		}
	}
	c.settle(d, 8*time.Second)
	got := map[uint8]int{}
	for _, n := range c.data {
		if n[0] != gspwire.Data && n[0] != gspwire.DataPart2 {
			t.Fatalf("stream notification % x: movesense-py reads codes 2 and 3", n[:2])
		}
		got[n[1]]++
		pyDecode(t, paths[n[1]], n[2:])
	}
	for ref, path := range paths {
		if got[ref] == 0 {
			t.Errorf("%s: no notification in 8 s", path)
		}
	}
	for ref := uint8(10); ref <= 15; ref++ {
		if st, _ := pyStatus(t, c.answer([]byte{byte(gspwire.Unsubscribe), ref}), 100); st != 200 {
			t.Errorf("UNSUBSCRIBE %d: %d", ref, st)
		}
	}
	end(c)
}

// pyDecode checks a stream payload the way movesense-py's
// parse_subscription_packet (src/movensense/protocol.py) reads it, from the
// path alone, with no reassembly of parts.
func pyDecode(t *testing.T, path string, p []byte) {
	t.Helper()
	low := strings.ToLower(path)
	switch {
	case strings.Contains(low, "temp"): // float32 Measurement at 0
		if k := f32(p); len(p) != 8 || k < 233 || k > 398 {
			t.Errorf("%s: % x reads %.1f K", path, p, k)
		}
	case strings.Contains(low, "/hr"): // float32 average at 0, uint16 RR from 4
		if len(p) < 6 || (len(p)-4)%2 != 0 {
			t.Errorf("%s: % x", path, p)
		} else if avg := f32(p); avg != 0 && (avg < 30 || avg > 250 || u16(p[4:]) < 200 || u16(p[4:]) > 3000) {
			t.Errorf("%s: average %.1f, RR %d", path, avg, u16(p[4:]))
		}
	case strings.Contains(low, "/mv"): // uint32 Timestamp, int16 µV
		if (len(p)-4)%2 != 0 || len(p) != 4+2*16 {
			t.Errorf("%s: %d bytes, want 16 int16 samples after the timestamp", path, len(p))
		}
	default: // uint32 Timestamp, then float32 x,y,z, Acc, Gyro, Magn blocks of equal length
		per := map[string]int{"/meas/acc/52": 12, "/meas/imu6/52": 24, "/meas/imu9/52": 36}[low]
		if len(p) < 4+per || (len(p)-4)%per != 0 {
			t.Errorf("%s: %d bytes, want a timestamp and samples of %d bytes", path, len(p), per)
			return
		}
		// The accelerometer block comes first: gravity is on it.
		x, y, z := f32(p[4:]), f32(p[8:]), f32(p[12:])
		if g := math.Sqrt(float64(x*x + y*y + z*z)); g < 7 || g > 13 {
			t.Errorf("%s: first sample |a| = %.1f m/s², not gravity", path, g)
		}
	}
}

// TestDeviceLibSampleClient replays the Python client of the device
// library's gatt_sensordata_app sample
// (samples/gatt_sensordata_app/python_client/movesense_sensor_data.py):
// notifications on, SUBSCRIBE on reference 99 with the path and no NUL,
// every notification read as a uint32 at byte 2 and its length, then
// UNSUBSCRIBE on 99.
func TestDeviceLibSampleClient(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	c := newCentral(t, d)
	if n := c.answer(append([]byte{1, 99}, "/Meas/Acc/13"...)); u16(n[2:]) != 200 {
		t.Fatalf("SUBSCRIBE /Meas/Acc/13: % x", n)
	}
	c.settle(d, 3*time.Second)
	var last uint32
	for i, n := range c.data {
		if n[0] != gspwire.Data || n[1] != 99 || len(n) < 6 {
			t.Fatalf("notification % x: the sample reads a uint32 at byte 2", n)
		}
		if ts := u32(n[2:]); i > 0 && ts <= last {
			t.Errorf("timestamp %d after %d", ts, last)
		} else {
			last = ts
		}
	}
	if len(c.data) < 3*13/2 { // 13 Hz, a few samples a notification
		t.Errorf("%d notifications in 3 s at 13 Hz", len(c.data))
	}
	if n := c.answer([]byte{2, 99}); u16(n[2:]) != 200 {
		t.Errorf("UNSUBSCRIBE: % x", n)
	}
}

// cmdLayout is one of Movesense Commander's payload layouts
// (src/lib/gsp/layouts.ts): scalars, arrays with a uint8 count, and
// arrays that fill the rest of the payload. Commander shows a layout only
// when it consumes the payload exactly.
type cmdLayout []cmdField

type cmdField struct {
	kind  byte   // 's' scalar, 'a' counted array, 'f' filling arrays
	types []byte // element types: 1 uint8, 2 uint16, 4 uint32, 8 uint64, 'f' float32, 'i' int16, 'I' int32, 'v' float32 x,y,z
}

func elemSize(t byte) int {
	switch t {
	case 'f', 'I':
		return 4
	case 'i':
		return 2
	case 'v':
		return 12
	}
	return int(t)
}

func elemValue(t byte, b []byte) float64 {
	switch t {
	case 1:
		return float64(b[0])
	case 2:
		return float64(u16(b))
	case 4:
		return float64(u32(b))
	case 8:
		return float64(binary.LittleEndian.Uint64(b))
	case 'f', 'v':
		return float64(f32(b))
	case 'i':
		return float64(int16(u16(b)))
	case 'I':
		return float64(int32(u32(b)))
	}
	panic("type")
}

// decode returns the values of each field (a filling field's first array),
// and whether the layout consumed p exactly.
func (l cmdLayout) decode(p []byte) ([][]float64, bool) {
	var out [][]float64
	for _, f := range l {
		var vals []float64
		switch f.kind {
		case 's':
			n := elemSize(f.types[0])
			if len(p) < n {
				return nil, false
			}
			vals, p = []float64{elemValue(f.types[0], p)}, p[n:]
		case 'a':
			if len(p) < 1 {
				return nil, false
			}
			cnt, n := int(p[0]), elemSize(f.types[0])
			p = p[1:]
			if len(p) < cnt*n {
				return nil, false
			}
			for i := range cnt {
				vals = append(vals, elemValue(f.types[0], p[i*n:]))
			}
			p = p[cnt*n:]
		case 'f':
			row := 0
			for _, t := range f.types {
				row += elemSize(t)
			}
			if len(p)%row != 0 {
				return nil, false
			}
			cnt, n := len(p)/row, elemSize(f.types[0])
			for i := range cnt {
				vals = append(vals, elemValue(f.types[0], p[i*n:]))
			}
			p = nil
		}
		out = append(out, vals)
	}
	return out, len(p) == 0
}

func sc(t byte) cmdField  { return cmdField{'s', []byte{t}} }
func arr(t byte) cmdField { return cmdField{'a', []byte{t}} }
func fill(ts ...byte) cmdField {
	return cmdField{'f', ts}
}

// commander is Movesense Commander's GspClient (src/lib/gsp/client.ts,
// framing.ts): references from an allocator, answers matched by
// reference, DATA and DATA_PART2 handed to the reference's handler one
// notification at a time (no reassembly), any other code dropped.
type commander struct {
	*central
	ref     uint8
	streams map[uint8][][]byte
	dropped int
}

func (c *commander) request(cmd []byte) (status uint16, data []byte) {
	c.t.Helper()
	n := c.answer(cmd)
	for _, d := range c.data {
		switch d[0] {
		case gspwire.Data, gspwire.DataPart2:
			c.streams[d[1]] = append(c.streams[d[1]], d[2:])
		default:
			c.dropped++
		}
	}
	c.data = c.data[:0]
	if len(n) < 4 {
		c.t.Fatalf("answer % x: readStatus wants 2 status bytes", n)
	}
	return u16(n[2:]), n[4:]
}

func (c *commander) nextRef() uint8 { c.ref++; return c.ref }

// checkTemp checks a temperature as Commander decodes it (layouts.ts:
// uint32 Timestamp, then float32 Measurement, verified on a sensor): a
// timestamp of the device's time so far and a temperature within
// /Meas/Temp/Info's range.
func checkTemp(t *testing.T, what string, vals [][]float64, d *senseboardtest.Rig) {
	t.Helper()
	ts, k := vals[0][0], vals[1][0]
	if now := float64(d.Device.RelativeTime()); ts > now || k < 233 || k > 398 {
		t.Errorf("%s: Timestamp %v ms (device time %v ms), Measurement %v K", what, ts, now, k)
	}
}

// TestCommanderClient replays Movesense Commander, the web app
// (sokolmarek/movesense-commander: src/lib/gsp/client.ts, framing.ts,
// decoders.ts, layouts.ts and docs/gsp-protocol.md): connect, record,
// download and erase, and the API explorer's reads.
func TestCommanderClient(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	c := &commander{central: newCentral(t, d), streams: map[uint8][][]byte{}}

	// Connect: HELLO (no status; decodeHello from byte 2), PUT_UTCTIME of
	// Date.now()*1000 (200), battery and logger state (200, one byte each).
	ref := c.nextRef()
	h := c.answer([]byte{byte(gspwire.Hello), ref})
	f := strings.Split(string(h[3:]), "\x00")
	if h[2] != gspwire.ProtocolVersion || len(f) < 5 || f[0] != d.Device.Profile().Serial || f[1] == "" || f[4] == "" {
		t.Errorf("decodeHello: version %d, strings %q", h[2], f)
	}
	utc := uint64(1_763_900_000_000_000)
	if st, _ := c.request(binary.LittleEndian.AppendUint64([]byte{byte(gspwire.PutUTCTime), c.nextRef()}, utc)); st != 200 {
		t.Fatalf("PUT_UTCTIME: %d", st)
	}
	for _, path := range []string{"/System/Energy/Level", "/Mem/DataLogger/State"} {
		if st, data := c.request(cmdPath(gspwire.Get, c.nextRef(), path, true)); st != 200 || len(data) != 1 {
			t.Fatalf("GET %s: %d % x, want 200 and decodeUint8", path, st, data)
		}
	}

	// The explorer's reads, decoded with the layouts Commander confirmed on a
	// real sensor; each must consume the payload exactly, with the values
	// docs/gsp-protocol.md reports.
	for _, tc := range []struct {
		path   string
		layout cmdLayout
		want   [][]float64 // nil: not checked
	}{
		{"/Meas/Acc/Info", cmdLayout{arr(2), arr(1)}, [][]float64{{13, 26, 52, 104, 208, 416, 833, 1666}, {2, 4, 8, 16}}},
		{"/Meas/Gyro/Info", cmdLayout{arr(2), arr(2)}, nil},
		{"/Meas/Magn/Info", cmdLayout{arr(2), arr(2)}, [][]float64{nil, {5000}}},
		{"/Meas/IMU/Info", cmdLayout{arr(2), arr(1), arr(2), arr(2)}, nil},
		{"/Meas/ECG/Info", cmdLayout{arr(2), sc(2), arr(2), arr('f')}, [][]float64{{125, 128, 200, 250, 256, 500, 512}, {16}, {40, 100, 150}, {0.5}}},
		{"/Meas/ECG/Config", cmdLayout{sc(2), sc('f')}, [][]float64{{40}, {0.5}}},
		{"/Meas/Temp/Info", cmdLayout{sc(4), sc(4), sc('f')}, [][]float64{{233}, {398}, {1}}},
		{"/Meas/HR/Info", cmdLayout{sc(2), sc(2), sc('f')}, [][]float64{{200}, {2000}, {5}}},
		{"/Meas/Temp", cmdLayout{sc(4), sc('f')}, nil}, // values checked below
		{"/Time", cmdLayout{sc(8)}, nil},
		{"/Time/Detailed", cmdLayout{sc(8), sc(4), sc(4), sc(4)}, [][]float64{nil, nil, {1024}, nil}},
	} {
		st, data := c.request(cmdPath(gspwire.Get, c.nextRef(), tc.path, true))
		vals, exact := tc.layout.decode(data)
		if st != 200 || !exact {
			t.Errorf("GET %s: %d % x does not fit Commander's layout", tc.path, st, data)
			continue
		}
		for i, w := range tc.want {
			if w != nil && !equalFloats(vals[i], w) {
				t.Errorf("GET %s: field %d is %v, want %v", tc.path, i, vals[i], w)
			}
		}
		if tc.path == "/Time/Detailed" && uint64(vals[0][0]) < utc {
			t.Errorf("/Time/Detailed utcTime %v, before the time set", vals[0][0])
		}
		if tc.path == "/Meas/Temp" {
			checkTemp(t, "GET /Meas/Temp", vals, d)
		}
	}
	if st, data := c.request(cmdPath(gspwire.Get, c.nextRef(), "/Info/App", true)); st != 200 || len(data) != 0 {
		t.Errorf("GET /Info/App: %d % x; the sensor answers 200 with an empty payload", st, data)
	}

	// Streams: SUBSCRIBE wants 200; each notification is decoded alone with
	// the path's layout, which must consume it exactly.
	streams := map[string]cmdLayout{
		"/Meas/ECG/200/mV": {sc(4), fill('i')},
		"/Meas/ECG/200":    {sc(4), fill('I')},
		"/Meas/Acc/52":     {sc(4), fill('v')},
		"/Meas/IMU6/52":    {sc(4), fill('v', 'v')},
		"/Meas/IMU9/52":    {sc(4), fill('v', 'v', 'v')},
		"/Meas/HR":         {sc('f'), fill(2)},
		"/Meas/Temp":       {sc(4), sc('f')},
	}
	refs := map[uint8]string{}
	for path := range streams {
		ref := c.nextRef()
		if st, _ := c.request(cmdPath(gspwire.Subscribe, ref, path, true)); st != 200 {
			t.Fatalf("SUBSCRIBE %s: %d; client.ts subscribe expects 200", path, st)
		}
		refs[ref] = path
	}
	c.settle(d, 8*time.Second)
	c.request([]byte{byte(gspwire.Hello), 254})
	for ref, path := range refs {
		if len(c.streams[ref]) == 0 {
			t.Errorf("%s: no notification in 8 s", path)
		}
		for _, p := range c.streams[ref] {
			vals, exact := streams[path].decode(p)
			if !exact {
				t.Errorf("%s: a %d-byte notification fits no layout", path, len(p))
				break
			}
			if path == "/Meas/Temp" {
				checkTemp(t, path, vals, d)
			}
			// The packet sizes Commander and the fixture saw on a sensor.
			if want := verifiedSize[path]; want != 0 && len(p) != want {
				t.Errorf("%s: a %d-byte notification; the sensor sends %d", path, len(p), want)
				break
			}
		}
		if st, _ := c.request([]byte{byte(gspwire.Unsubscribe), ref}); st != 200 {
			t.Errorf("UNSUBSCRIBE %s: %d", path, st)
		}
	}
	if c.dropped != 0 {
		t.Errorf("%d notifications with a code Commander drops (it knows 1, 2, 3)", c.dropped)
	}

	// Record: the configuration with /Time/Detailed appended (200), state 3
	// (200), state 2 (200), PUT_SYSTEMMODE 5 (200 or 202) to roll the log.
	cfg := []byte{byte(gspwire.PutDataLoggerConfig), c.nextRef()}
	for _, p := range []string{"/Meas/IMU9/52", "/Meas/ECG/200/mV", "/Time/Detailed"} {
		cfg = append(append(cfg, p...), 0)
	}
	for _, cmd := range [][]byte{cfg, {byte(gspwire.PutDataLoggerState), c.nextRef(), 3}} {
		if st, _ := c.request(cmd); st != 200 {
			t.Fatalf("% x: %d", cmd[:2], st)
		}
	}
	for range 30 {
		d.Advance(100 * time.Millisecond)
	}
	if st, _ := c.request([]byte{byte(gspwire.PutDataLoggerState), c.nextRef(), 2}); st != 200 {
		t.Fatalf("stop: %d", st)
	}
	if st, _ := c.request([]byte{byte(gspwire.PutSystemMode), c.nextRef(), 5}); st != 200 && st != 202 {
		t.Fatalf("PUT_SYSTEMMODE 5: %d, Commander accepts 200 and 202", st)
	}
	c.conn.Close()
	d.Advance(4 * time.Second)

	// Download: the listing (decodeLogbookEntries: uint8 count, 16-byte
	// entries), FETCH_LOG per id (200, then [offset, bytes] on DATA and
	// DATA_PART2 until an empty body, assembled by offset with no gaps),
	// then probing max id + 1 for 404.
	c = &commander{central: newCentral(t, d), streams: map[uint8][][]byte{}}
	st, list := c.request(cmdPath(gspwire.Get, c.nextRef(), "/Mem/Logbook/entries", true))
	if st != 200 || len(list) < 1 || int(list[0]) != (len(list)-1)/16 || (len(list)-1)%16 != 0 || list[0] == 0 {
		t.Fatalf("listing: %d % x", st, list)
	}
	var maxID uint32
	for i := range int(list[0]) {
		e := list[1+16*i:]
		id, size := u32(e), binary.LittleEndian.Uint64(e[8:])
		maxID = max(maxID, id)
		ref := c.nextRef()
		if st, _ := c.request(binary.LittleEndian.AppendUint32([]byte{byte(gspwire.FetchLog), ref}, id)); st != 200 {
			t.Fatalf("FETCH_LOG %d: %d", id, st)
		}
		var file []byte
		covered := 0
		for done := false; !done; {
			n := c.next()
			if n[1] != ref || (n[0] != gspwire.Data && n[0] != gspwire.DataPart2) || len(n) < 6 {
				t.Fatalf("FETCH_LOG %d: % x", id, n[:min(len(n), 6)])
			}
			off, body := int(u32(n[2:])), n[6:]
			if done = len(body) == 0; done {
				break
			}
			if off > covered {
				t.Fatalf("FETCH_LOG %d: gap [%d, %d)", id, covered, off)
			}
			file = append(file[:off], body...)
			covered = max(covered, off+len(body))
		}
		if uint64(len(file)) != size || !bytes.HasPrefix(file, []byte("SBEM")) {
			t.Fatalf("log %d: %d bytes, listing says %d", id, len(file), size)
		}
		if _, err := sbem.Decode(file); err != nil {
			t.Errorf("log %d: %v", id, err)
		}
	}
	if st, _ := c.request(binary.LittleEndian.AppendUint32([]byte{byte(gspwire.FetchLog), c.nextRef()}, maxID+1)); st != 404 {
		t.Errorf("probing log %d: %d, Commander probes until 404", maxID+1, st)
	}

	// Erase: CLEAR_LOGBOOK (200), and the listing is empty.
	if st, _ := c.request([]byte{byte(gspwire.ClearLogbook), c.nextRef()}); st != 200 {
		t.Fatalf("CLEAR_LOGBOOK: %d", st)
	}
	if st, list := c.request(cmdPath(gspwire.Get, c.nextRef(), "/Mem/Logbook/entries", true)); st != 200 || !bytes.Equal(list, []byte{0}) {
		t.Errorf("listing after erase: %d % x", st, list)
	}
}

// verifiedSize is the payload size of a stream notification as a real
// sensor sends it: Commander's docs/gsp-protocol.md and layouts.ts (ECG 36
// and 68 bytes, IMU6 100, IMU9 148 at 52 Hz) and movesense-py's
// validation fixture (Acc 52 bytes at 52 Hz).
var verifiedSize = map[string]int{
	"/Meas/ECG/200/mV": 36,
	"/Meas/ECG/200":    68,
	"/Meas/Acc/52":     52,
	"/Meas/IMU6/52":    100,
	"/Meas/IMU9/52":    148,
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-6 {
			return false
		}
	}
	return true
}

// TestLogDataSubscription reads a log the way the device library's sample
// client reads the sample's log notifications
// (samples/gatt_sensordata_app/python_client/movesense_sensor_data.py reads
// "offset" as the uint32 at byte 2; the sample firmware,
// GATTSensorDataClient.cpp, sends a subscription to
// /Mem/Logbook/byId/{LogId}/Data as DATA and DATA_PART2 notifications of
// [offset, bytes], each part with its own offset, and ends with empty
// bytes): every part stands alone, on codes 2 and 3, and the parts put at
// their offsets give the log.
func TestLogDataSubscription(t *testing.T) {
	d := senseboardtest.New(t, senseboard.Config{})
	c := newCentral(t, d)
	cfg := append([]byte{byte(gspwire.PutDataLoggerConfig), 1}, "/Meas/Acc/52\x00/Meas/ECG/200/mV\x00/Time/Detailed\x00"...)
	for _, cmd := range [][]byte{cfg, {byte(gspwire.PutDataLoggerState), 2, 3}} {
		if n := c.answer(cmd); u16(n[2:]) != 200 {
			t.Fatalf("% x: % x", cmd[:2], n)
		}
	}
	for range 30 {
		d.Advance(100 * time.Millisecond)
	}
	if n := c.answer([]byte{byte(gspwire.PutDataLoggerState), 3, 2}); u16(n[2:]) != 200 {
		t.Fatalf("stop: % x", n)
	}
	st, want := pyFetch(t, c, 1)
	if st != 200 || len(want) < 1000 {
		t.Fatalf("FETCH_LOG: %d, %d bytes", st, len(want))
	}
	c.conn.Close()

	for _, mtu := range []int{gspwire.MinMTU, gspwire.DefaultMTU} {
		c := &central{peer: connect(t, d, mtu)}
		// The answer comes first, though the transfer starts at once.
		if n := c.first(append([]byte{1, 99}, "/Mem/Logbook/byId/1/Data"...)); n[0] != gspwire.CommandResponse || n[1] != 99 || u16(n[2:]) != 200 {
			t.Fatalf("MTU %d: SUBSCRIBE: % x", mtu, n)
		}
		var got []byte
		for done := false; !done; {
			var n []byte
			select {
			case n = <-c.notes:
			default: // the transfer goes on as the subscriber takes it
				d.Advance(time.Millisecond)
				continue
			}
			if n[1] != 99 || (n[0] != gspwire.Data && n[0] != gspwire.DataPart2) || len(n) < 6 {
				t.Fatalf("MTU %d: notification % x", mtu, n[:min(len(n), 6)])
			}
			off, body := int(u32(n[2:])), n[6:]
			if done = len(body) == 0; done {
				if off != len(want) {
					t.Errorf("MTU %d: end mark at offset %d, the log has %d bytes", mtu, off, len(want))
				}
				break
			}
			if off != len(got) {
				t.Fatalf("MTU %d: bytes at offset %d after %d bytes", mtu, off, len(got))
			}
			got = append(got, body...)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("MTU %d: %d bytes by subscription differ from the %d of FETCH_LOG", mtu, len(got), len(want))
		}
		if n := c.answer([]byte{2, 99}); u16(n[2:]) != 200 {
			t.Errorf("MTU %d: UNSUBSCRIBE: % x", mtu, n)
		}
	}
}
