package system_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"senseboard"
	"senseboard/device"
	"senseboard/fault"
	"senseboard/provider/system"
	"senseboard/resource"
	sbt "senseboard/senseboardtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mode(t *testing.T, d *sbt.Rig) *system.Mode {
	t.Helper()
	return d.Expect(200, resource.Get, "/System/Mode").Content.(*system.Mode)
}

func TestModeTransitions(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	if m := mode(t, d); m.Current != 5 || m.Next != nil {
		t.Fatalf("start %+v", m)
	}
	for _, v := range []uint8{3, 0, 2, 4, 10, 11} {
		d.Expect(501, resource.Put, "/System/Mode", resource.Uint8(v))
	}
	for _, v := range []uint8{6, 7, 13, 255} {
		d.Expect(400, resource.Put, "/System/Mode", resource.Uint8(v))
	}
	// Application while in Application: a reset
	d.Advance(5 * time.Second)
	sub := d.Subscribe("/Time")
	d.Expect(200, resource.Put, "/System/Mode", resource.Uint8(5))
	if m := mode(t, d); m.Next == nil || *m.Next != 5 {
		t.Errorf("pending switch not shown: %+v", m)
	}
	d.Advance(device.SwitchDelay)
	if d.Device.RelativeTime() != 0 || mode(t, d).Next != nil {
		t.Errorf("no reset: relative time %d", d.Device.RelativeTime())
	}
	if ev := sub.Events(); len(ev) != 1 || ev[0].Ended != resource.EndReset {
		t.Errorf("subscription after the reset: %+v", ev)
	}
	// FwUpdateMode: a reset into the bootloader, which answers nothing,
	// and back into the application after the update timeout
	d.Expect(200, resource.Put, "/System/Mode", resource.Uint8(12))
	d.Advance(device.SwitchDelay)
	if d.Device.Mode() != device.ModeFwUpdate || !d.Off("/System/Mode") {
		t.Fatalf("mode %v: want update mode, answering nothing", d.Device.Mode())
	}
	d.Advance(fault.UpdateTimeout)
	if m := mode(t, d); m.Current != 5 {
		t.Fatalf("after the update timeout: %+v", m)
	}
	d.Expect(200, resource.Get, "/Meas/Acc/Info")
}

func TestFullPowerOffWakesOnContact(t *testing.T) {
	d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, "events:\n  - at: 30s\n    gear: off\n  - at: 60s\n    gear: on\n")})
	d.Expect(200, resource.Put, "/Component/MAX3000x/WakeUp", resource.Uint8(1))
	sub := d.Subscribe("/Meas/Acc/13")
	d.Expect(200, resource.Put, "/System/Mode", resource.Uint8(1))
	d.Advance(time.Second)
	if !d.Off("/Info") {
		t.Fatal("the device still answers after turning off")
	}
	if ev := sub.Events(); len(ev) != 1 || ev[0].Ended != resource.EndPowerOff {
		t.Errorf("subscription at power off: %+v", ev)
	}
	d.Advance(50 * time.Second) // the gear comes off at 30 s: no wake-up
	if !d.Off("/Info") {
		t.Fatal("woke without contact")
	}
	d.Advance(11 * time.Second) // contact again at 60 s
	if d.Off("/Info") {
		t.Fatal("did not wake on electrode contact")
	}
	// it woke within a poll of the contact, at 60 s, and booted like a reset
	if rt := d.Device.RelativeTime(); rt < 2000-uint32(2*system.PollInterval.Milliseconds()) || rt > 2000 {
		t.Errorf("relative time %d ms at 62 s: the wake-up was not at 60 s", rt)
	}
}

func TestFullPowerOffWakesOnMovement(t *testing.T) {
	d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, "segments:\n  - rest: 40s\n  - walk: 1m\n")})
	d.Expect(200, resource.Put, "/Component/MAX3000x/WakeUp", resource.Uint8(0))
	d.Expect(200, resource.Put, "/System/Mode", resource.Uint8(1))
	d.Advance(30 * time.Second)
	if !d.Off("/Info") {
		t.Fatal("woke at rest")
	}
	d.Advance(20 * time.Second)
	if d.Off("/Info") {
		t.Fatal("did not wake when the wearer started walking")
	}
}

func TestHeap(t *testing.T) {
	d := sbt.New(t, senseboard.Config{})
	h := d.Expect(200, resource.Get, "/System/Memory/Heap").Content.(*system.Heap)
	if h.Size != 32768 || h.Used+h.Free != h.Size || h.LowestFree != h.Free || h.SufficiencyTestResult != (resource.Pair{Value: 0, Name: "NotTested"}) {
		t.Fatalf("fresh heap %+v", h)
	}
	a, b := d.Subscribe("/Time"), d.Subscribe("/Meas/Temp")
	h2 := d.Expect(200, resource.Get, "/System/Memory/Heap").Content.(*system.Heap)
	if h2.Used <= h.Used {
		t.Errorf("subscriptions do not use heap: %+v", h2)
	}
	a.Client.Close()
	b.Client.Close()
	h3 := d.Expect(200, resource.Get, "/System/Memory/Heap").Content.(*system.Heap)
	if h3.Free != h.Free || h3.LowestFree != h2.Free {
		t.Errorf("after unsubscribing free %d (want %d), lowest %d (want %d)", h3.Free, h.Free, h3.LowestFree, h2.Free)
	}
	d.Device.ArmHeapTest(h.Free - 500) // one subscription (416 bytes) stays within it, two do not
	d.Subscribe("/Time")
	if r := d.Expect(200, resource.Get, "/System/Memory/Heap").Content.(*system.Heap).SufficiencyTestResult; r.Name != "Passed" {
		t.Errorf("result %v, want Passed", r)
	}
	d.Subscribe("/Meas/Temp")
	if r := d.Expect(200, resource.Get, "/System/Memory/Heap").Content.(*system.Heap).SufficiencyTestResult; r.Name != "Failed" {
		t.Errorf("result %v, want Failed", r)
	}
	d.Device.Reset()
	if r := d.Expect(200, resource.Get, "/System/Memory/Heap").Content.(*system.Heap).SufficiencyTestResult; r.Name != "NotTested" {
		t.Errorf("after reset %v", r)
	}
}

func TestStatesFromTheWearer(t *testing.T) {
	d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, "start:\n  battery: 12%\nevents:\n  - at: 20s\n    battery: 8%\n  - at: 30s\n    gear: off\n")})
	d.Expect(404, resource.Get, "/System/States/6")
	d.Expect(404, resource.Get, "/System/States/-1")
	for _, id := range []string{"0", "3", "4", "5"} {
		env := d.Expect(503, resource.Get, "/System/States/"+id)
		if env.Error == "" {
			t.Errorf("state %s: no explanation", id)
		}
		if s := d.Subscribe("/System/States/" + id); s.Env.Status != 503 {
			t.Errorf("subscribe to state %s without the accelerometer: %d", id, s.Env.Status)
		}
	}
	if v := d.Expect(200, resource.Get, "/System/States/1").Content; v != int32(0) {
		t.Errorf("battery at 12%%: %v", v)
	}
	if v := d.Expect(200, resource.Get, "/System/States/2").Content; v != int32(1) {
		t.Errorf("connectors with the gear on: %v", v)
	}
	battery, connectors := d.Subscribe("/System/States/1"), d.Subscribe("/System/States/2")
	d.Advance(time.Minute)
	check := func(s *sbt.Sub, id int, want int32, at uint32) {
		t.Helper()
		got := s.Contents()
		if len(got) != 1 {
			t.Fatalf("state %d: %d notifications, want 1", id, len(got))
		}
		c := got[0].(*system.StateChange)
		if c.StateID.Value != id || c.NewState != want || c.Timestamp < at || c.Timestamp > at+uint32(system.PollInterval.Milliseconds()) {
			t.Errorf("state %d: %+v", id, c)
		}
	}
	check(battery, 1, 1, 20000)
	check(connectors, 2, 0, 30000)
	// with the accelerometer running, movement reads
	d.Subscribe("/Meas/Acc/13")
	if v := d.Expect(200, resource.Get, "/System/States/0").Content; v != int32(0) {
		t.Errorf("movement at rest: %v", v)
	}
}

// A battery level set by the scenario applies once; the battery drains from it.
func TestBatteryEventAppliesOnce(t *testing.T) {
	d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, "events:\n  - at: 1s\n    battery: 50%\n")})
	d.Advance(2 * time.Second)
	if b := d.Device.System.Battery(); b > 0.5 || b < 0.4999 {
		t.Fatalf("battery %.5f just after the event", b)
	}
	d.Advance(20 * time.Hour)
	if b := d.Device.System.Battery(); b > 0.47 {
		t.Errorf("battery %.4f twenty hours after the event: it does not drain", b)
	}
}

func TestBatteryDrains(t *testing.T) {
	d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, "start:\n  battery: 11%\n")})
	start := d.Device.System.Battery()
	for range 4 { // the drain counts subscriptions; /Time costs little to simulate
		d.Subscribe("/Time")
	}
	d.Advance(10 * time.Hour)
	end := d.Device.System.Battery()
	if end >= start || start-end < 0.01 || start-end > 0.1 {
		t.Errorf("battery %.4f after 10 h, from %.4f", end, start)
	}
	if v := d.Expect(200, resource.Get, "/System/States/1").Content; v != int32(1) {
		t.Errorf("battery state %v below 10%%", v)
	}
	d.Device.System.SetBattery(1)
	if v := d.Expect(200, resource.Get, "/System/States/1").Content; v != int32(0) {
		t.Errorf("after a charge: %v", v)
	}
}

// A brief loss of electrode contact shows in the Connectors state: 0 while
// it lasts, 1 again after.
func TestConnectorsFollowContactLoss(t *testing.T) {
	d := sbt.New(t, senseboard.Config{Scenario: sbt.Scenario(t, "events:\n  - at: 10s\n    contactLoss: 3s\n")})
	connectors := d.Subscribe("/System/States/2")
	d.Advance(20 * time.Second)
	got := connectors.Contents()
	if len(got) != 2 {
		t.Fatalf("%d notifications, want 2 (off, on): %v", len(got), got)
	}
	off, on := got[0].(*system.StateChange), got[1].(*system.StateChange)
	tol := uint32(system.PollInterval.Milliseconds())
	if off.NewState != 0 || off.Timestamp < 10000 || off.Timestamp > 10000+tol || on.NewState != 1 || on.Timestamp < 13000 || on.Timestamp > 13000+tol {
		t.Errorf("notifications %+v, %+v; want 0 at 10 s and 1 at 13 s", off, on)
	}
}
