package bridge_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"senseboard/bridge/bridgeclient"
	"senseboard/edf"
	"senseboard/phone"
)

// faultRig is a bridge with one device of its program on a virtual clock
// ten times faster than real time, and a WebSocket client of the bridge,
// as a web app or a backend uses it.
type faultRig struct {
	*rig
	t *testing.T
	c *bridgeclient.Client
}

const faulty = "000123"

// with returns the rig for a subtest, whose failures end the subtest.
func (f *faultRig) with(t *testing.T) *faultRig {
	r := *f.rig
	r.t = t
	return &faultRig{rig: &r, t: t, c: f.c}
}

// fault starts a fault through the API and returns its record.
func (f *faultRig) fault(body string) bridgeclient.FaultRecord {
	f.t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		f.t.Fatal(err)
	}
	rec, err := f.c.Fault(f.ctx, faulty, v)
	if err != nil {
		f.t.Fatalf("POST fault %s: %v", body, err)
	}
	return rec
}

// truth returns the record of a fault as GET .../faults lists it, once
// ok accepts it.
func (f *faultRig) truth(id int, what string, ok func(bridgeclient.FaultRecord) bool) bridgeclient.FaultRecord {
	f.t.Helper()
	deadline := time.Now().Add(time.Minute) // a guard against hanging, not a bound
	for {
		list, err := f.c.Faults(f.ctx, faulty)
		if err == nil && id <= len(list) && list[id-1].ID == id && ok(list[id-1]) {
			return list[id-1]
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("fault %d: not %s within a minute: %+v, %v", id, what, list, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ended(by string) func(bridgeclient.FaultRecord) bool {
	return func(r bridgeclient.FaultRecord) bool { return r.End != nil && r.EndedBy == by }
}

// get sends a GET over the WebSocket once the device is connected.
func (f *faultRig) get(path string) *bridgeclient.Response {
	f.t.Helper()
	f.connected(faulty)
	resp, err := f.c.Get(f.ctx, path)
	if err != nil {
		f.t.Fatalf("GET %s: %v", path, err)
	}
	return resp
}

// subscribe subscribes over the WebSocket once the device is connected.
func (f *faultRig) subscribe(path string) *bridgeclient.Subscription {
	f.t.Helper()
	f.connected(faulty)
	s, resp, err := f.c.Subscribe(f.ctx, path)
	if err != nil || !resp.OK() {
		f.t.Fatalf("SUBSCRIBE %s: %+v, %v", path, resp, err)
	}
	return s
}

// next returns a subscription's next notification.
func (f *faultRig) next(s *bridgeclient.Subscription) (bridgeclient.Notification, bool) {
	f.t.Helper()
	select {
	case n, ok := <-s.C():
		return n, ok
	case <-time.After(time.Minute): // a guard against hanging, not a bound
		f.t.Fatal("no notification within a minute")
	}
	return bridgeclient.Notification{}, false
}

// ends waits for the end of a subscription, the notifications that waited
// let go, and returns why it ended.
func (f *faultRig) ends(s *bridgeclient.Subscription) error {
	f.t.Helper()
	guard := time.After(time.Minute) // a guard against hanging, not a bound
	for {
		select {
		case _, ok := <-s.C():
			if !ok {
				return s.Err()
			}
		case <-guard:
			f.t.Fatal("the subscription did not end within a minute")
		}
	}
}

// stamp returns a notification's Timestamp: the device's relative time,
// in ms, of its first sample.
func stamp(t *testing.T, n bridgeclient.Notification) uint32 {
	t.Helper()
	var c struct{ Timestamp *uint32 }
	if err := json.Unmarshal(n.Content, &c); err != nil || c.Timestamp == nil {
		t.Fatalf("a notification without a timestamp: %s (%v)", n.Content, err)
	}
	return *c.Timestamp
}

// TestFaultsThroughTheBridge injects each field fault through the bridge's
// API into a device that a WebSocket client of the bridge uses, and checks
// what that client sees (the symptom) and how it recovers, and the ground
// truth the API gives. The faults follow one another on one device.
func TestFaultsThroughTheBridge(t *testing.T) {
	r := newRig(t, rigConfig{local: []string{faulty}, speed: 10, bridge: phone.Config{Reconnect: true}})
	f := &faultRig{rig: r, t: t, c: r.dial(&bridgeclient.Options{Device: faulty})}
	r.connected(faulty)

	t.Run("stall", func(t *testing.T) {
		f := f.with(t)
		acc := f.subscribe("/Meas/Acc/52")
		f.next(acc)
		rec := f.fault(`{"fault": "stall", "path": "/Meas/Acc"}`)
		// The link stays up and another stream flows; the stalled one
		// sends nothing from the stall's start. What it sent before may
		// still come, late: the phone hands each stream's notifications on
		// from a goroutine of its own, and the client's inbox from one of
		// its own, so they can reach the test after the answers to later
		// requests, as late as a busy machine makes them. Each of them
		// was sampled before the stall began (a notification leaves once
		// its last sample is taken), and so before the gyroscope's
		// stream, which starts after it: a notification whose first
		// sample is not older than the gyroscope's first is one the stall
		// let through. (Device time, which a busy machine slows but does
		// not reorder.)
		if resp := f.get("/Info"); resp.Response != 200 {
			t.Errorf("GET /Info during the stall: %d", resp.Response)
		}
		gyro := f.subscribe("/Meas/Gyro/52")
		var gyroStart uint32
		for i := range 20 {
			n, _ := f.next(gyro)
			if i == 0 {
				gyroStart = stamp(t, n)
			}
		}
		for len(acc.C()) > 0 {
			if at := stamp(t, <-acc.C()); at >= gyroStart {
				t.Errorf("a notification of the stalled stream sampled from %d ms, after the stall began: the gyroscope's stream, subscribed after it, started at %d ms", at, gyroStart)
			}
		}
		if acc.Err() != nil {
			t.Errorf("the stalled subscription ended: %v", acc.Err())
		}
		gyro.Unsubscribe(f.ctx)
		// recovery: subscribe again
		acc.Unsubscribe(f.ctx)
		f.truth(rec.ID, "ended by a new subscription", ended("resubscribed"))
		acc = f.subscribe("/Meas/Acc/52")
		f.next(acc)
		acc.Unsubscribe(f.ctx)
	})

	t.Run("recording", func(t *testing.T) {
		f := f.with(t)
		f.connected(faulty)
		rec, err := f.c.StartRecording(f.ctx, faulty, "jsonl", "/Meas/ECG/125")
		if err != nil {
			t.Fatal(err)
		}
		recorded := func(atLeast int64) int64 { // notifications recorded, once there are that many
			deadline := time.Now().Add(time.Minute) // a guard against hanging, not a bound
			for {
				for _, st := range f.recordings() {
					if st.Name == rec.Name && st.Notifications >= atLeast {
						return st.Notifications
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("recording %s: not %d notifications within a minute", rec.Name, atLeast)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		recorded(5)
		stall := f.fault(`{"fault": "stall", "path": "/Meas/ECG", "for": "2s"}`)
		f.truth(stall.ID, "ended after its time", ended("for"))
		recorded(recorded(0) + 5)
		if _, err := f.c.StopRecording(f.ctx, rec.Name); err != nil {
			t.Fatal(err)
		}
		status, body := f.call("GET", "/api/recordings/"+rec.Name+"/files/"+rec.Name+".faults.jsonl", "")
		if status != 200 || strings.Count(body, "\n") != 1 || !strings.Contains(body, `"fault":"stall","for":"2s","path":"/Meas/ECG"`) {
			t.Errorf("the recording's ground truth: %d %s", status, body)
		}
		status, body = f.call("GET", "/api/recordings/"+rec.Name+"/files/"+rec.Name+".edf", "")
		file, err := edf.Unmarshal([]byte(body))
		if status != 200 || err != nil {
			t.Fatalf("EDF+: %d %v %.300s", status, err, body)
		}
		var notes []string
		for _, a := range file.Annotations {
			if strings.HasPrefix(a.Text, "fault") {
				notes = append(notes, fmt.Sprintf("%v %s", a.Onset.Round(time.Second), a.Text))
			}
		}
		if len(notes) != 2 || !strings.Contains(notes[0], "stall start") || !strings.Contains(notes[1], "stall end (for)") {
			t.Errorf("the EDF+ annotations of the fault: %q", notes)
		}
	})

	t.Run("firsthr", func(t *testing.T) {
		f := f.with(t)
		rec := f.fault(`{"fault": "firsthr"}`)
		first := func() (a, b float64) {
			hr := f.subscribe("/Meas/HR")
			defer hr.Unsubscribe(f.ctx)
			var v [2]struct{ Average float64 }
			for i := range v {
				n, _ := f.next(hr)
				json.Unmarshal(n.Content, &v[i])
			}
			return v[0].Average, v[1].Average
		}
		if a, b := first(); a != 160 || b > 100 {
			t.Errorf("heart rate under firsthr: %v then %v, want 160 then the wearer's", a, b)
		}
		f.c.EndFault(f.ctx, faulty, rec.ID)
		if a, _ := first(); a > 100 {
			t.Errorf("the first heart rate after the fault: %v", a)
		}
	})

	t.Run("busy", func(t *testing.T) {
		f := f.with(t)
		before := f.connected(faulty).Handle
		rec := f.fault(`{"fault": "busy"}`)
		if resp := f.get("/Info"); resp.Response != 429 || resp.ResponseString != "HTTP_CODE_TOO_MANY_REQUESTS" {
			t.Errorf("GET /Info while busy: %d %s", resp.Response, resp.Error)
		}
		if resp, err := f.c.Put(f.ctx, "/System/Mode", 5); err != nil || resp.Response != 200 {
			t.Fatalf("the reset while busy: %+v, %v", resp, err)
		}
		f.truth(rec.ID, "ended by the reset", ended("reset"))
		// the reset ends the connection a moment after its answer: the
		// phone is connected after it once it has another connection
		f.waitFor(faulty, "connected after the reset", func(s phone.DeviceState) bool {
			return s.Connected && s.Note == "" && s.Handle != nil && before != nil && *s.Handle != *before
		})
		if resp := f.get("/Info"); resp.Response != 200 {
			t.Errorf("GET /Info after the reset: %d", resp.Response)
		}
	})

	t.Run("clockreset", func(t *testing.T) {
		f := f.with(t)
		const set = 1_700_000_000_000_000
		if resp, err := f.c.Put(f.ctx, "/Time", set); err != nil || resp.Response != 200 {
			t.Fatalf("PUT /Time: %+v, %v", resp, err)
		}
		detailed := func() (rel uint32, utc int64) {
			var dt struct {
				RelativeTime uint32 `json:"relativeTime"`
				UTCTime      int64  `json:"utcTime"`
			}
			json.Unmarshal(f.get("/Time/Detailed").Content, &dt)
			return dt.RelativeTime, dt.UTCTime
		}
		before, _ := detailed()
		for guard := time.Now().Add(time.Minute); before < 1000; before, _ = detailed() { // a second since the last reset
			if time.Now().After(guard) {
				t.Fatalf("relative time %d ms after a minute", before)
			}
			time.Sleep(10 * time.Millisecond)
		}
		rec := f.fault(`{"fault": "clockreset"}`)
		after, utc := detailed()
		if after >= before || utc >= set {
			t.Errorf("after the clock reset: relative time %d (before %d), UTC %d: want both started again", after, before, utc)
		}
		f.c.Put(f.ctx, "/Time", set)
		f.truth(rec.ID, "ended by setting the time", ended("time set"))
		if _, utc := detailed(); utc < set {
			t.Errorf("UTC %d after setting it", utc)
		}
	})

	t.Run("drop", func(t *testing.T) {
		f := f.with(t)
		acc := f.subscribe("/Meas/Acc/52")
		f.next(acc)
		rec := f.fault(`{"fault": "drop", "delay": "2s"}`)
		if err := f.ends(acc); !errors.Is(err, bridgeclient.ErrEnded) || !strings.Contains(err.Error(), "supervision timeout") {
			t.Errorf("the subscription over the dropped link: %v, want its end by the supervision timeout", err)
		}
		f.truth(rec.ID, "ended by advertising again", ended("advertising"))
		acc = f.subscribe("/Meas/Acc/52") // the phone connects again
		f.next(acc)
		acc.Unsubscribe(f.ctx)
	})

	t.Run("stuck", func(t *testing.T) {
		f := f.with(t)
		// until the client ends it: a stuck device of a few seconds is
		// over before a busy machine's phone tries again after the drop's
		// supervision timeout, and the note it looks for never comes
		rec := f.fault(`{"fault": "stuck", "mode": "refuse", "for": "1h"}`)
		f.waitFor(faulty, "refusing connections", func(s phone.DeviceState) bool {
			return strings.Contains(s.Note, "connection failed to be established")
		})
		if _, err := f.c.EndFault(f.ctx, faulty, rec.ID); err != nil {
			t.Fatalf("DELETE the stuck fault: %v", err)
		}
		f.truth(rec.ID, "ended by the client", ended("deleted"))
		f.connected(faulty)
	})

	t.Run("phoneoff", func(t *testing.T) {
		f := f.with(t)
		// a device stuck silent until the phone turns Bluetooth off and on
		stuck := f.fault(`{"fault": "stuck", "for": "1h"}`)
		f.waitFor(faulty, "silent", func(s phone.DeviceState) bool { return !s.Connected && !s.Advertising })
		off := f.fault(`{"fault": "phoneoff", "for": "150ms"}`)
		if st, _ := f.b.Device(faulty); !strings.Contains(st.Note, "Bluetooth is off") {
			t.Errorf("note while Bluetooth is off: %q", st.Note)
		}
		f.truth(off.ID, "ended after its time", ended("for"))
		f.truth(stuck.ID, "ended by the phone's Bluetooth power cycle", ended("phoneoff"))
		acc := f.subscribe("/Meas/Acc/52")
		f.next(acc)
		// the phone's Bluetooth off drops every connection at once
		f.fault(`{"fault": "phoneoff", "for": "150ms"}`)
		if err := f.ends(acc); err == nil || !strings.Contains(err.Error(), "Bluetooth") {
			t.Errorf("the subscription when Bluetooth turned off: %v", err)
		}
		f.connected(faulty)
	})

	t.Run("interference", func(t *testing.T) {
		f := f.with(t)
		ecg := f.subscribe("/Meas/ECG/125")
		stamps := make(chan uint32, 4096)
		quit, read := make(chan struct{}), make(chan struct{})
		go func() { // read as a client does, while the fault runs, until the subscription ends or the test stops taking
			defer close(read)
			defer close(stamps)
			for {
				var n bridgeclient.Notification
				var open bool
				select {
				case n, open = <-ecg.C():
				case <-quit:
					return
				}
				if !open {
					return
				}
				var c struct{ Timestamp uint32 }
				json.Unmarshal(n.Content, &c)
				select {
				case stamps <- c.Timestamp:
				case <-quit:
					return
				}
			}
		}()
		unsubscribed := false
		defer func() { // also after a failure: the subscription and its reader end before the next subtest
			close(quit)
			if !unsubscribed {
				ecg.Unsubscribe(f.ctx)
			}
			select {
			case <-read:
			case <-time.After(time.Minute): // a guard against hanging, not a bound
				t.Error("the ECG's reader did not return once the test stopped taking")
			}
		}()
		guard := time.After(time.Minute) // a guard against hanging, not a bound
		next := func(what string) (ts uint32) {
			t.Helper()
			open := true
			select {
			case ts, open = <-stamps:
			case <-guard:
				t.Fatalf("no ECG %s within a minute", what)
			}
			if !open {
				t.Fatalf("the ECG subscription ended %s: %v", what, ecg.Err())
			}
			return ts
		}
		last := next("before the interference") // the ECG flows: every loss after it is seen
		rec := f.fault(`{"fault": "interference", "share": 0.95, "for": "6s"}`)
		truth := f.truth(rec.ID, "ended after its time", ended("for"))
		start, end := truth.Start.MS, truth.End.MS
		// At 95% of the connection events empty, most of the ECG of the
		// interference is lost; after it, a second on, the ECG comes whole
		// again: 2 s of it without a gap. (A machine too busy to run the
		// device's ten-times clock smoothly loses notifications of its own,
		// a stretch at a time, which the run waits out.)
		lostIn, whole := 0, 0 // notifications of 16 samples, 128 ms
		for whole < 16 {
			ts := next(fmt.Sprintf("of 2 s without a gap after the interference's end at %d ms (the last at %d, %d lost during it)", end, last, lostIn))
			gap := ts-last > 200
			for at := last + 128; gap && at+64 < ts; at += 128 { // the notifications lost between
				if at >= start && at <= end {
					lostIn++
				}
			}
			switch {
			case last <= end+1000: // the second after it
			case gap:
				whole = 0
			default:
				whole++
			}
			last = ts
		}
		ecg.Unsubscribe(f.ctx)
		unsubscribed = true
		if lostIn < 10 || ecg.Dropped() > 0 {
			t.Errorf("ECG notifications lost: %d in the 6 s of interference (%d dropped by the client); want most of the 47", lostIn, ecg.Dropped())
		}
	})

	t.Run("battery", func(t *testing.T) {
		f := f.with(t)
		f.c.Inject(f.ctx, faulty, map[string]any{"battery": "12%"})
		state := f.subscribe("/System/States/1")
		rec := f.fault(`{"fault": "battery", "rate": 120}`)
		n, _ := f.next(state)
		var low struct{ NewState int }
		json.Unmarshal(n.Content, &low)
		if low.NewState != 1 {
			t.Errorf("battery state %s, want 1 (low)", n.Content)
		}
		f.ends(state) // the device turns off
		f.waitFor(faulty, "off", func(s phone.DeviceState) bool { return !s.Connected && !s.Advertising })
		f.c.EndFault(f.ctx, faulty, rec.ID) // charged: it wakes
		var level int
		json.Unmarshal(f.get("/System/Energy/Level").Content, &level)
		if level != 100 {
			t.Errorf("battery %d%% after the charge", level)
		}
	})

	t.Run("dfu", func(t *testing.T) {
		f := f.with(t)
		want := dfuAddress(t, f)
		rec := f.fault(`{"fault": "dfu", "stay": true}`)
		st := f.waitFor(faulty, "in update mode", func(s phone.DeviceState) bool { return s.UpdateMode })
		if st.Name != "DfuTarg" || st.Address != want || st.State != "update mode" {
			t.Errorf("in update mode the bridge lists %q at %s (%s), want DfuTarg at %s", st.Name, st.Address, st.State, want)
		}
		if _, err := f.c.Get(f.ctx, "/Info"); err == nil {
			t.Error("GET /Info answered in update mode")
		}
		f.c.EndFault(f.ctx, faulty, rec.ID) // a power cycle
		st = f.connected(faulty)
		if st.Name == "DfuTarg" || st.UpdateMode {
			t.Errorf("after the power cycle: %+v", st)
		}
		// PUT /System/Mode 12 is the same fault, of the device's own
		f.c.Put(f.ctx, "/System/Mode", 12)
		f.waitFor(faulty, "in update mode", func(s phone.DeviceState) bool { return s.UpdateMode })
		list, err := f.c.Faults(f.ctx, faulty)
		if err != nil || list[len(list)-1].Fault != "dfu" || list[len(list)-1].Origin != "device" {
			t.Fatalf("after PUT /System/Mode 12: %+v, %v", list, err)
		}
		if !strings.Contains(string(list[len(list)-1].Raw), `"for":"2m0s"`) {
			t.Errorf("its timeout: %s", list[len(list)-1].Raw)
		}
		f.c.EndFault(f.ctx, faulty, list[len(list)-1].ID)
		f.connected(faulty)
	})

	t.Run("refusals", func(t *testing.T) {
		for _, tt := range []struct {
			method, path, body string
			status             int
			want               string
		}{
			{"POST", "/api/devices/000123/faults", `{"fault": "meltdown"}`, 400, "allowed: stall, drop, stuck"},
			{"POST", "/api/devices/000123/faults", `{"fault": "stall", "for": "soon"}`, 400, "a duration as Go writes them"},
			{"POST", "/api/devices/000999/faults", `{"fault": "stall"}`, 404, "no such device"},
			{"DELETE", "/api/devices/000123/faults/999", ``, 404, "no such fault"},
			{"DELETE", "/api/devices/000123/faults/x", ``, 404, "no such fault"},
			{"DELETE", "/api/devices/000123/faults/1", ``, 409, "ended already"},
		} {
			status, body := r.call(tt.method, tt.path, tt.body)
			if status != tt.status || !strings.Contains(body, tt.want) {
				t.Errorf("%s %s %s: %d %s, want %d with %q", tt.method, tt.path, tt.body, status, body, tt.status, tt.want)
			}
		}
	})
}

// dfuAddress reads the device's DFU-BLE address from /Info.
func dfuAddress(t *testing.T, f *faultRig) string {
	var info struct {
		AddressInfo []struct{ Name, Address string } `json:"addressInfo"`
	}
	json.Unmarshal(f.get("/Info").Content, &info)
	for _, a := range info.AddressInfo {
		if a.Name == "DFU-BLE" {
			return strings.ReplaceAll(a.Address, "-", ":")
		}
	}
	t.Fatalf("no DFU-BLE address in /Info: %+v", info)
	return ""
}
