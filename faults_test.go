package senseboard_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"senseboard"
	"senseboard/content"
	"senseboard/device"
	"senseboard/fault"
	"senseboard/radio"
	"senseboard/resource"
	sbt "senseboard/senseboardtest"
	"senseboard/world"
)

// TestFaultsOnTheDevice carries out the faults that the device core and
// its providers carry out, on a virtual clock, and checks each one's
// effect, its end and its ground truth. (The link's faults are tested
// through the radio link's clients: bridge, link and cmd tests.)
func TestFaultsOnTheDevice(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	d.Advance(10 * time.Second)
	d.Expect(200, resource.Put, "/Time", resource.Int64(1_700_000_000_000_000))

	// stall: the subscription stays, its notifications stop; a new
	// subscription to the path restores the stream
	acc := d.SubscribeAll("/Meas/Acc/52")
	d.Advance(time.Second)
	if len(acc.Contents()) == 0 {
		t.Fatal("no accelerometer data before the stall")
	}
	stall := d.Fault(`{"fault": "stall", "path": "/Meas/Acc"}`)
	d.Advance(2 * time.Second)
	if n := len(acc.Contents()); n != 0 {
		t.Errorf("%d notifications of a stalled stream", n)
	}
	d.Expect(200, resource.Get, "/Info") // the device answers
	d.Do(resource.Unsubscribe, "/Meas/Acc/52")
	acc.Client.Close()
	if rec := d.Faults()[stall.ID-1]; rec.End == nil || rec.EndedBy != fault.EndedResubscribed {
		t.Errorf("stall after its stream ended: %+v", rec)
	}
	again := d.SubscribeAll("/Meas/Acc/52")
	d.Advance(time.Second)
	if len(again.Contents()) == 0 {
		t.Error("a new subscription got no data after the stall")
	}
	again.Client.Close()

	// busy: 429 to everything, the reset carried out, which ends it
	busy := d.Fault(`{"fault": "busy"}`)
	d.Expect(429, resource.Get, "/Info")
	d.Expect(429, resource.Get, "/No/Such/Path")
	d.Expect(429, resource.Put, "/System/Mode", resource.Uint8(12))
	d.Expect(200, resource.Put, "/System/Mode", resource.Uint8(5))
	d.Advance(device.SwitchDelay)
	d.Expect(200, resource.Get, "/Info")
	if rec := d.Faults()[busy.ID-1]; rec.EndedBy != fault.EndedReset {
		t.Errorf("busy after the reset: %+v", rec)
	}

	// clockreset: relative time and UTC restart; setting the time ends it
	d.Advance(5 * time.Second)
	d.Expect(200, resource.Put, "/Time", resource.Int64(1_700_000_000_000_000))
	cr := d.Fault(`{"fault": "clockreset"}`)
	var dt content.DetailedTime
	decode(t, d.Expect(200, resource.Get, "/Time/Detailed"), &dt)
	if dt.RelativeTime != 0 || dt.UTCTime != 0 {
		t.Errorf("after the clock reset: %+v, want relative time and UTC from 0", dt)
	}
	d.Advance(time.Second)
	d.Expect(200, resource.Put, "/Time", resource.Int64(1_700_000_100_000_000))
	if rec := d.Faults()[cr.ID-1]; rec.EndedBy != fault.EndedTimeSet || rec.End.MS != 1000 {
		t.Errorf("clockreset after the time was set: %+v", rec)
	}

	// firsthr: the first heart rate of each subscription is implausible
	fh := d.Fault(`{"fault": "firsthr"}`)
	for range 2 {
		hr := d.SubscribeAll("/Meas/HR")
		d.Advance(6 * time.Second)
		got := hr.Contents()
		if len(got) < 3 || got[0].(*content.HRData).Average != 160 || got[2].(*content.HRData).Average > 100 {
			t.Errorf("heart rate under firsthr: %v", hrs(got))
		}
		hr.Client.Close()
	}
	d.EndFault(fh.ID)
	hr := d.SubscribeAll("/Meas/HR")
	d.Advance(6 * time.Second)
	if got := hr.Contents(); len(got) == 0 || got[0].(*content.HRData).Average > 100 {
		t.Errorf("heart rate after firsthr: %v", hrs(got))
	}
	hr.Client.Close()

	// battery: it drains, the state goes low, the device turns off at
	// empty, and the fault's end charges it and wakes it
	d.Device.Inject(eventBattery(0.12))
	state := d.SubscribeAll("/System/States/1")
	bat := d.Fault(`{"fault": "battery", "rate": 60}`)
	d.Advance(3 * time.Second) // 12% - 3% < 10%
	if got := state.Contents(); len(got) != 1 {
		t.Errorf("battery state notifications %v, want one (low)", got)
	}
	d.Advance(10 * time.Second)
	if !d.Off("/Info") {
		t.Fatal("the device answers with an empty battery")
	}
	d.EndFault(bat.ID)
	if d.Off("/Info") {
		t.Fatal("the device did not wake when charged")
	}
	d.Expect(200, resource.Get, "/System/Energy/Level")
	if level := d.Device.System.EnergyLevel(); level != 100 {
		t.Errorf("battery %d%% after the fault, want 100", level)
	}

	// dfu: nothing answers; the update timeout brings the application back
	dfu := d.Fault(`{"fault": "dfu"}`)
	if !d.Off("/Info") {
		t.Error("a device in update mode answers")
	}
	d.Advance(fault.UpdateTimeout)
	d.Expect(200, resource.Get, "/Info")
	if rec := d.Faults()[dfu.ID-1]; rec.EndedBy != fault.EndedFor || rec.End.MS < 119990 || rec.End.MS > 120010 {
		t.Errorf("dfu after its timeout: %+v, ended at %+v", rec, rec.End)
	}
	// PUT /System/Mode 12 is a dfu fault of the device's own
	d.Expect(200, resource.Put, "/System/Mode", resource.Uint8(12))
	d.Advance(device.SwitchDelay)
	list := d.Faults()
	own := list[len(list)-1]
	if own.Fault.Kind != fault.DFU || own.Origin != fault.FromDevice || own.Fault.For != fault.UpdateTimeout {
		t.Fatalf("after PUT /System/Mode 12: %+v", own)
	}
	d.EndFault(own.ID) // a power cycle
	d.Expect(200, resource.Get, "/Info")

	// faults the device refuses
	for _, bad := range []string{`{"fault": "drop", "for": "1s"}`, `{"fault": "meltdown"}`} {
		if _, err := d.Device.Faults.InjectJSON([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, err := d.Device.Faults.End(99); err == nil {
		t.Error("an unknown fault ended")
	}
}

// TestBusyOrganic exhausts the request pool with requests that time out,
// as requests over a lost link do.
func TestBusyOrganic(t *testing.T) {
	p := sbt.New(t, senseboard.Config{}).Device.Profile().WithSerial("000124")
	p.RequestPool = 3
	d := sbt.New(t, senseboard.Config{Profile: p})
	for range 2 {
		d.Device.RequestTimedOut()
	}
	d.Expect(200, resource.Get, "/Info")
	d.Device.RequestTimedOut()
	d.Expect(429, resource.Get, "/Info")
	if list := d.Faults(); len(list) != 1 || list[0].Fault.Kind != fault.Busy || list[0].Origin != fault.FromDevice {
		t.Fatalf("ground truth %+v", list)
	}
	d.Expect(200, resource.Put, "/System/Mode", resource.Uint8(5))
	d.Advance(device.SwitchDelay)
	d.Expect(200, resource.Get, "/Info")
}

// TestFaultPlanSameBytes plays a scenario with a fault plan, timed and
// random, twice on a virtual clock: the same seed gives the same faults
// at the same times and the same stream bytes, and the faults change the
// streams (a plan that does nothing would pass the first check too).
func TestFaultPlanSameBytes(t *testing.T) {
	const sc = `
clockDrift: off
faults:
  - at: 2s
    fault: stall
    path: /Meas/ECG
    for: 3s
  - at: 8s
    fault: clockreset
    for: 4s
  - fault: firsthr
    perHour: 600
    for: 5s..20s
`
	play := func(scenario string) (string, []fault.Record) {
		d := sbt.New(t, senseboard.Config{Seed: 5, Scenario: sbt.Scenario(t, scenario)})
		ecg := d.SubscribeAll("/Meas/ECG/125")
		hr := d.SubscribeAll("/Meas/HR")
		h := sha256.New()
		for range 40 {
			d.Advance(500 * time.Millisecond)
			for _, s := range []*sbt.Sub{ecg, hr} {
				for _, c := range s.Contents() {
					b, _ := json.Marshal(c)
					h.Write(b)
				}
			}
		}
		return fmt.Sprintf("%x", h.Sum(nil)), d.Faults()
	}
	a, truth := play(sc)
	b, again := play(sc)
	healthy, none := play("clockDrift: off")
	if a != b {
		t.Error("the same seed and plan gave other stream bytes")
	}
	ja, _ := json.Marshal(truth)
	jb, _ := json.Marshal(again)
	if string(ja) != string(jb) {
		t.Errorf("the same seed and plan gave other faults:\n%s\n%s", ja, jb)
	}
	if a == healthy || len(none) != 0 {
		t.Error("the plan changed nothing")
	}
	if len(truth) < 3 || truth[0].Fault.Kind != fault.Stall || truth[0].Start.MS != 2000 || truth[0].End == nil || truth[0].End.MS != 5000 {
		t.Errorf("ground truth %s", ja)
	}
}

// TestFleetFaultLog runs a fleet with a fault plan: each device keeps its
// ground truth in its state directory, its random faults drawn from its
// own seed.
func TestFleetFaultLog(t *testing.T) {
	plan, err := fault.ParsePlan([]byte("- at: 1s\n  fault: busy\n  for: 1s\n"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	vclk := sbt.New(t, senseboard.Config{}).Clock
	f, err := senseboard.NewFleet(senseboard.Config{StateDir: dir, Clock: vclk, Faults: plan}, senseboard.FleetOptions{Devices: 2, PTY: "none", Listen: "none"})
	if err != nil {
		t.Fatal(err)
	}
	vclk.Advance(3 * time.Second)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, serial := range []string{"000123", "000124"} {
		file, err := os.Open(filepath.Join(dir, serial, senseboard.FaultLog))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := fault.ReadJSONL(file)
		file.Close()
		if err != nil || len(recs) != 1 || recs[0].Device != serial || recs[0].EndedBy != fault.EndedFor || recs[0].End.MS < 1990 {
			t.Errorf("%s: ground truth %+v, %v (a busy for 1s from 1s)", serial, recs, err)
		}
	}
}

func decode(t *testing.T, env resource.Envelope, v any) {
	t.Helper()
	b, err := json.Marshal(env.Content)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func hrs(cs []any) []float32 {
	var out []float32
	for _, c := range cs {
		out = append(out, c.(*content.HRData).Average)
	}
	return out
}

func eventBattery(level float64) world.Event { return world.Event{Kind: world.Battery, Value: level} }

// TestInterferenceHidesGaps runs interference over a connection of the
// radio, with and without hideGap: either way it loses whole
// notifications of the ECG; the timestamps show the gaps, or hide them as
// older firmware did.
func TestInterferenceHidesGaps(t *testing.T) {
	run := func(hide bool) (gaps int, lost uint64) {
		d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, "clockDrift: off")})
		q := &sbt.Collector{} // a reader that keeps up with everything
		conn, err := d.Device.Radio.Connect(radio.NewCentral("C0:00:00:00:00:01", "phone"), q)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Disconnect()
		env, err := d.Device.Do(&resource.Request{Op: resource.Subscribe, Path: "/Meas/ECG/125", Client: conn.Client()})
		if err != nil || !env.Status.OK() {
			t.Fatalf("subscribe: %+v, %v", env, err)
		}
		d.Fault(fmt.Sprintf(`{"fault": "interference", "share": 0.95, "hideGap": %v, "for": "10s"}`, hide))
		var cs []any
		for range 120 { // read as a client does
			d.Advance(100 * time.Millisecond)
			cs = append(cs, sbt.Contents(q)...)
		}
		var last uint32
		for _, c := range cs {
			ts := c.(*content.ECGData).Timestamp
			if last != 0 && ts-last != 128 {
				gaps++
			}
			last = ts
		}
		for _, s := range conn.Client().Subscriptions() {
			lost += s.Dropped()
		}
		return gaps, lost
	}
	if gaps, lost := run(false); gaps == 0 || lost == 0 {
		t.Errorf("interference: %d gaps, %d notifications lost; want both", gaps, lost)
	}
	if gaps, lost := run(true); gaps != 0 || lost == 0 {
		t.Errorf("interference that hides its gaps: %d gaps, %d notifications lost; want none, and some", gaps, lost)
	}
}
