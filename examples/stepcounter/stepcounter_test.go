package stepcounter_test

import (
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"

	"senseboard"
	"senseboard/app"
	"senseboard/clock"
	"senseboard/examples/stepcounter"
	"senseboard/internal/await"
	"senseboard/internal/clienttest"
	"senseboard/resource"
	"senseboard/transport/serial"
	"senseboard/world"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func start(t *testing.T, scenario string) (*senseboard.Device, *clock.Virtual, *app.Runtime) {
	t.Helper()
	sc, err := world.ParseScenario([]byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	c := clock.NewVirtual()
	d, err := senseboard.New(senseboard.Config{Clock: c, Seed: 3, StateDir: t.TempDir(), Scenario: sc})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := app.Run(d.Core, stepcounter.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rt.Stop()
		d.Close()
	})
	return d, c, rt
}

// advance moves device time on in steps, giving the app's goroutine time to
// take its notifications.
func advance(c *clock.Virtual, d time.Duration) {
	for end := c.Now() + d; c.Now() < end; {
		c.Advance(100 * time.Millisecond)
		time.Sleep(time.Millisecond)
	}
}

func steps(t *testing.T, d *senseboard.Device) uint32 {
	t.Helper()
	var env resource.Envelope
	deadline := time.Now().Add(await.Guard) // a guard against hanging, not a bound
	for {
		env, _ = d.Call(resource.Get, "/Sample/StepCounter/Steps")
		if env.Status.OK() || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !env.Status.OK() {
		t.Fatalf("GET steps: %d %s", env.Status, env.Error)
	}
	return env.Content.(*stepcounter.StepCount).Steps
}

func TestCountsWalkingSteps(t *testing.T) {
	d, c, _ := start(t, "segments:\n  - rest: 30s\n  - walk: 2m\n    cadence: 110\n")
	advance(c, 30*time.Second)
	if n := steps(t, d); n > 3 {
		t.Errorf("%d steps at rest", n)
	}
	advance(c, 70*time.Second) // a minute of walking after the ramp
	n := steps(t, d)
	if n < 95 || n > 130 {
		t.Errorf("%d steps in about a minute of walking at 110 steps/min", n)
	}
	if env, _ := d.Call(resource.Delete, "/Sample/StepCounter/Steps"); !env.Status.OK() {
		t.Fatal(env.Error)
	}
	if n := steps(t, d); n != 0 {
		t.Errorf("%d steps after clearing", n)
	}
}

// The app's resources are validated against its definition and reachable
// over the serial protocol like the device's own, subscriptions included.
func TestReachableOverTheSerialPath(t *testing.T) {
	d, c, _ := start(t, "segments:\n  - walk: 10m\n")
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { (&serial.Server{Device: d.Core}).Serve(ctx, ln); close(done) }()
	defer func() { cancel(); <-done }()
	cl, err := clienttest.Dial(ctx, "TCP"+ln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rec, _ := resource.RecordJSON("StepConfig", []byte(`{"threshold": 50}`))
	if env, _ := cl.Do(ctx, resource.Put, "/sample/stepcounter/config", rec); env.Response != 400 {
		t.Errorf("threshold over the definition's maximum: %d %s", env.Response, env.Error)
	}
	rec, _ = resource.RecordJSON("StepConfig", []byte(`{"Threshold": 1.5}`))
	if env, _ := cl.Do(ctx, resource.Put, "/Sample/StepCounter/Config", rec); !env.OK() {
		t.Errorf("PUT config: %s", env.Error)
	}
	sub, env, err := cl.Subscribe(ctx, "/Sample/StepCounter/Steps")
	if err != nil || !env.OK() {
		t.Fatalf("subscribe: %v %+v", err, env)
	}
	advanced := make(chan struct{})
	go func() { advance(c, 20*time.Second); close(advanced) }()
	defer func() { await.Within(t, advanced, "the device's clock did not advance its 20 s") }()
	var last stepcounter.StepCount
	for range 5 {
		n := await.Within(t, sub.C(), "no step notification")
		if err := json.Unmarshal(n.Payload, &last); err != nil {
			t.Fatal(err)
		}
	}
	if last.Steps < 5 {
		t.Errorf("after five notifications the count is %d", last.Steps)
	}
	sub.Unsubscribe(ctx)
}

// An app restarts with the device: its state is volatile.
func TestRestartsOnReset(t *testing.T) {
	d, c, rt := start(t, "segments:\n  - walk: 10m\n")
	advance(c, 20*time.Second)
	if n := steps(t, d); n == 0 {
		t.Fatal("no steps before the reset")
	}
	d.Reset()
	if rt.Context() == nil {
		t.Fatal("the app did not restart")
	}
	if n := steps(t, d); n > 2 {
		t.Errorf("%d steps right after the reset", n)
	}
}
