package load

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"senseboard"
	"senseboard/air"
	"senseboard/air/airtest"
	"senseboard/resource"
)

func TestMain(m *testing.M) { airtest.Main(m) }

// onAir runs n devices from serial 000123 on a NATS server of the test's
// own, as a program does, and returns the link of another program (the
// load's) to the same server.
func onAir(t *testing.T, n int) (*senseboard.Fleet, *air.Link) {
	t.Helper()
	addr := airtest.FreeLocal(t)
	devices := airtest.Local(t, addr, air.Options{})
	h, err := senseboard.NewFleet(senseboard.Config{StateDir: t.TempDir(), Seed: 7}, senseboard.FleetOptions{Devices: n, PTY: "none", Listen: "none", Air: devices})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { h.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return h, airtest.Local(t, addr, air.Options{Name: Name})
}

// TestAir runs the load against three devices over the radio link between
// programs: the three default streams arrive through the BLE throughput
// model, whole notifications in order, the notifications of a connection
// event in one message, and none is lost. When the process is held up
// (descheduled or stopped on a busy machine) the real clock runs the
// batches that fell due meanwhile at once, late, and the throughput model
// takes each, and runs the connection events between them, at the time
// it fell due (clock.Due): ECG's front end, which holds two notifications
// (the topic's Limit), loses none to a pause. The test asserts nothing of
// time: that the streams keep up is the load's to measure, and the
// throughput model's tests show it on a virtual clock.
func TestAir(t *testing.T) {
	t.Parallel()
	_, link := onAir(t, 3)
	paths := []string{"/Meas/IMU6/52", "/Meas/ECG/125", "/Meas/HR"}
	r, err := Run(context.Background(), Config{Air: link, Serials: []string{"000123", "000124", "000125"}, Subscribe: paths,
		Duration: 1500 * time.Millisecond, Interval: time.Hour, Timeout: time.Minute}) // a guard against hanging, not a bound
	if err != nil {
		t.Fatal(err)
	}
	if r.Reached != 3 || r.Failed != 0 || r.Devices != 3 {
		t.Errorf("reached %d, failed %d of %d; want 3, 0 of 3", r.Reached, r.Failed, r.Devices)
	}
	var notifications int64
	batch := map[string]int64{"/Meas/IMU6/52": 4, "/Meas/ECG/125": 16}
	for _, s := range r.Streams {
		notifications += s.Notifications
		if s.Rate == 0 {
			continue
		}
		if s.Notifications < 3 || s.Samples != s.Notifications*batch[s.Path] || s.Lost != 0 || s.Disorder != 0 {
			t.Errorf("%s: %d notifications, %d samples, lost %d, out of order %d; want at least one per device, %d samples each, none lost",
				s.Path, s.Notifications, s.Samples, s.Lost, s.Disorder, batch[s.Path])
		}
	}
	// a message carries at least one notification; the odd pong of the
	// client's keepalive comes on its own
	if r.Messages == 0 || r.Messages > notifications+3 || r.MessageRate <= 0 {
		t.Errorf("%d radio messages (%.1f per device-second) for %d notifications", r.Messages, r.MessageRate, notifications)
	}
	var b strings.Builder
	Print(&b, r)
	if !strings.Contains(b.String(), "radio messages") {
		t.Errorf("summary without the radio messages:\n%s", b.String())
	}
	// the devices' program, this one, is found from what it says on the air
	if r.Process == nil || r.Process.PID != os.Getpid() || r.Process.RSS <= 0 || r.Process.PerDevice != r.Process.RSS/3 {
		t.Errorf("the devices' process: %+v; want this one's, per device of 3", r.Process)
	}
}

// TestAirNotReached: a serial no program serves, and a device that asks for
// its pass key, are named with the reason; with the pass key the load
// pairs and goes on, and a subscription the device refuses is named with
// the device too.
func TestAirNotReached(t *testing.T) {
	t.Parallel()
	h, link := onAir(t, 1)
	ctx := context.Background()
	cfg := Config{Air: link, Serials: []string{"000999"}, Subscribe: []string{"/Meas/HR"}, Duration: time.Millisecond, Timeout: time.Minute} // a guard against hanging, not a bound
	if _, err := Run(ctx, cfg); !errors.Is(err, ErrDevices) || !errors.Is(err, air.ErrNotOnAir) || !strings.Contains(err.Error(), "000999") {
		t.Errorf("a device not on the air: %v; want %v and %v naming it", err, ErrDevices, air.ErrNotOnAir)
	}

	env, err := h.Members[0].Device.Do(&resource.Request{Op: resource.Put, Path: "/Comm/Ble/Security/Pin", Params: []resource.Value{resource.String("123456")}})
	if err != nil || !env.Status.OK() {
		t.Fatalf("set pass key: %+v %v", env, err)
	}
	cfg.Serials = []string{"000123"}
	if _, err := Run(ctx, cfg); !errors.Is(err, ErrPairing) || !strings.Contains(err.Error(), "device 000123") {
		t.Errorf("a device that asks for its pass key: %v; want %v naming it", err, ErrPairing)
	}
	cfg.PassKey = "123456"
	if r, err := Run(ctx, cfg); err != nil || r.Reached != 1 {
		t.Errorf("with the pass key: reached %d, %v", r.Reached, err)
	}
	// a subscription the device refuses, named with the device once
	refused := cfg
	refused.Subscribe = []string{"/Meas/Acc/7"}
	if _, err := Run(ctx, refused); !errors.Is(err, ErrDevices) || !strings.Contains(err.Error(), "device 000123: subscribe /Meas/Acc/7: status 501: SampleRate 7 is not supported") || strings.Count(err.Error(), "000123") != 1 {
		t.Errorf("a subscription the device refuses: %v; want its status and reason, naming the device once", err)
	}
	cfg.PassKey = "000000"
	if _, err := Run(ctx, cfg); !errors.Is(err, ErrDevices) || !strings.Contains(err.Error(), "pass key does not match") {
		t.Errorf("with a wrong pass key: %v; want the device's refusal", err)
	}
	// the radio's refusal names the device in its own words, and the
	// error names it once
	if _, err := h.Members[0].Device.Faults.InjectJSON([]byte(`{"fault": "stuck", "mode": "refuse"}`)); err != nil {
		t.Fatal(err)
	}
	_, err = Run(ctx, cfg)
	if !errors.Is(err, ErrDevices) || !strings.Contains(err.Error(), "device 000123: connection failed to be established") || strings.Count(err.Error(), "000123") != 1 {
		t.Errorf("a device that refuses every connection: %v; want the radio's refusal, naming the device once", err)
	}
}

func TestConfigRefused(t *testing.T) {
	link := &air.Link{} // never used: the config is refused first
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Subscribe: []string{"/Meas/HR"}}, "no devices"},
		{Config{Addrs: []string{"127.0.0.1:1"}, Air: link, Serials: []string{"000123"}, Subscribe: []string{"/Meas/HR"}}, "reached one way"},
		{Config{Serials: []string{"000123"}, Subscribe: []string{"/Meas/HR"}}, "without the radio link"},
		{Config{Air: link, Serials: []string{"000123"}, Subscribe: []string{"/Meas/HR"}, ConnInterval: 8 * time.Millisecond}, "connection interval 8ms: 7.5 ms to 4 s in steps of 1.25 ms"},
		{Config{Air: link, Serials: []string{"000123"}, Subscribe: []string{"/Meas/HR"}, ConnInterval: 5 * time.Second}, "connection interval 5s"},
		{Config{Addrs: []string{"127.0.0.1:1"}}, "no paths to subscribe to"},
		{Config{Addrs: []string{"127.0.0.1:1"}, Subscribe: []string{"/Meas/HR"}, MinDelivery: 2}, "least delivery 2"},
		{Config{Addrs: []string{"127.0.0.1:1"}, Subscribe: []string{"Meas/HR"}}, `path "Meas/HR"`},
		{Config{Addrs: []string{"127.0.0.1:1"}, Subscribe: []string{"/Meas/Temp"}}, "no sample rate"},
		{Config{Addrs: []string{"127.0.0.1:1"}, Subscribe: []string{"/Meas/HR"}, PID: 1 << 30}, "the devices' process: load: process 1073741824"},
	} {
		// The words say which setting; ErrConfig says it was the configuration.
		if _, err := Run(context.Background(), tc.cfg); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(%+v) = %v; want ErrConfig, with %q", tc.cfg, err, tc.want)
		}
	}
}
