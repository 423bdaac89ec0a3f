package app_test

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"senseboard"
	"senseboard/app"
	"senseboard/clock"
	"senseboard/device"
	"senseboard/internal/await"
	"senseboard/profile"
	"senseboard/provider/debug"
	"senseboard/provider/system"
	"senseboard/resource"
	"senseboard/world"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// funcApp is an app made of a function.
type funcApp struct {
	name  string
	start func(ctx *app.Context) error
}

func (a funcApp) Name() string                 { return a.name }
func (a funcApp) Start(ctx *app.Context) error { return a.start(ctx) }

func newDevice(t testing.TB) (*senseboard.Device, *clock.Virtual) {
	t.Helper()
	c := clock.NewVirtual()
	p := profile.Default()
	p.Modules.Heap = true
	off := 0.0
	sc := world.DefaultScenario()
	sc.ClockDrift = &off // a perfect oscillator: the tests read exact times
	d, err := senseboard.New(senseboard.Config{Clock: c, Seed: 1, StateDir: t.TempDir(), Profile: p, Scenario: sc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, c
}

func TestCallsInOrderOnOneGoroutine(t *testing.T) {
	d, _ := newDevice(t)
	out := make(chan string, 10)
	var inside atomic.Int32
	enter := func() {
		if inside.Add(1) != 1 {
			out <- "two callbacks at once"
		}
	}
	leave := func() { inside.Add(-1) }
	rt, err := app.Run(d.Core, funcApp{"order", func(ctx *app.Context) error {
		ctx.Put("/Time", func(env resource.Envelope) {
			enter()
			defer leave()
			out <- fmt.Sprint("put ", env.Status.OK())
		}, resource.Int64(1_700_000_000_000_000))
		ctx.Get("/Time", func(env resource.Envelope) {
			enter()
			defer leave()
			out <- fmt.Sprint("get ", env.Content.(int64) >= 1_700_000_000_000_000)
		})
		// several parameters: the path parameter first, then the body
		ctx.Get("/Component/Eeprom/{EepromIndex}", func(env resource.Envelope) {
			enter()
			defer leave()
			out <- fmt.Sprint("eeprom ", env.Status, " ", env.URI)
		}, resource.Int32(1), resource.Uint32(0), resource.Uint8(2))
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop()
	for _, want := range []string{"put true", "get true", "eeprom HTTP_CODE_OK /net/000123/Component/Eeprom/1"} {
		if got := await.Within(t, out, "the app has not answered"); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

// TestIdleAppHoldsNoGoroutine: an app that has nothing to do holds no
// goroutine (a fleet runs thousands of them), and its goroutine starts
// again for what comes next: a call's answer, a notification.
func TestIdleAppHoldsNoGoroutine(t *testing.T) {
	d, c := newDevice(t)
	before := goleak.IgnoreCurrent()
	out := make(chan string, 10)
	rt, err := app.Run(d.Core, funcApp{"idle", func(ctx *app.Context) error {
		ctx.Get("/Time", func(env resource.Envelope) { out <- fmt.Sprint("get ", env.Status) })
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop()
	if got := await.Within(t, out, "the app has not answered"); got != "get HTTP_CODE_OK" {
		t.Fatalf("got %q", got)
	}
	if err := goleak.Find(before); err != nil {
		t.Errorf("an idle app holds goroutines: %v", err)
	}
	postToApp(rt, func() {
		rt.Context().Subscribe("/Time", func(content any) { out <- fmt.Sprint("tick ", content.(int64)) }, nil)
	})
	c.Advance(time.Second)
	if got := await.Within(t, out, "the app has not answered"); got != "tick 1000000" {
		t.Errorf("got %q, want tick 1000000", got)
	}
}

func TestSubscribeUnsubscribe(t *testing.T) {
	d, c := newDevice(t)
	out := make(chan string, 100)
	var sub *app.Subscription
	rt, err := app.Run(d.Core, funcApp{"sub", func(ctx *app.Context) error {
		sub = ctx.Subscribe("/Time", func(content any) {
			out <- fmt.Sprint("tick ", content.(int64))
		}, func(env resource.Envelope) { out <- fmt.Sprint("subscribed ", env.Status) })
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop()
	if got := await.Within(t, out, "the app has not answered"); got != "subscribed HTTP_CODE_OK" {
		t.Fatalf("got %q", got)
	}
	c.Advance(2 * time.Second)
	for _, want := range []string{"tick 1000000", "tick 2000000"} {
		if got := await.Within(t, out, "the app has not answered"); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	done := make(chan string, 1)
	rt.Context().Device() // the context is reachable while the app runs
	postToApp(rt, func() { sub.Unsubscribe(func(env resource.Envelope) { done <- fmt.Sprint(env.Status) }) })
	if got := await.Within(t, done, "the app has not answered"); got != "HTTP_CODE_OK" {
		t.Errorf("unsubscribe: %s", got)
	}
	if d.Hub().Count() != 0 {
		t.Errorf("%d subscriptions after unsubscribing", d.Hub().Count())
	}
}

// postToApp runs f on the app's goroutine through a timer of no delay.
func postToApp(rt *app.Runtime, f func()) {
	rt.Context().After(0, f)
	rt.Context().Device().Clock().(*clock.Virtual).Advance(0)
}

func TestProvideErrors(t *testing.T) {
	d, _ := newDevice(t)
	def := func(path string) []byte {
		return []byte("swagger: '2.0'\ninfo: {version: '1', title: T, x-api-state: s, x-api-required: false, x-api-type: public}\npaths:\n  " +
			path + ":\n    get:\n      responses:\n        200: {description: ok}\n")
	}
	tests := []struct {
		name     string
		yaml     []byte
		handlers app.Handlers
		msg      string
	}{
		{"not swagger", []byte("nope: ["), nil, "not a Swagger 2.0 document"},
		{"device path", def("/Info"), app.Handlers{"GET /Info": nil}, "already a device resource"},
		{"unknown handler", def("/Sample/A"), app.Handlers{"PUT /Sample/A": nil}, `handler "PUT /Sample/A" has no operation`},
		{"missing handler", def("/Sample/B"), app.Handlers{}, "no handler for GET /Sample/B"},
		{"too large", append(def("/Sample/C"), strings.Repeat("# padding\n", app.MaxDefinition/10)...), app.Handlers{"GET /Sample/C": nil},
			"app-bad.yaml: the definition is 32942 bytes; an app's definition is at most 32768"},
	}
	for _, tt := range tests {
		_, err := app.Run(d.Core, funcApp{"bad", func(ctx *app.Context) error { return ctx.Provide(tt.yaml, tt.handlers) }})
		if err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: %v, want containing %q", tt.name, err, tt.msg)
		}
	}
}

// An app's definition file is named after the app, in the characters a
// definition file's name may have, so that the radio link can name it.
func TestDefinitionFileName(t *testing.T) {
	d, _ := newDevice(t)
	def := []byte("swagger: '2.0'\ninfo: {version: '1', title: T, x-api-state: s, x-api-required: false, x-api-type: public}\npaths:\n" +
		"  /Sample/Named:\n    get:\n      responses:\n        200: {description: ok}\n")
	rt, err := app.Run(d.Core, funcApp{"Step Counter/2 ü", func(ctx *app.Context) error {
		return ctx.Provide(def, app.Handlers{"GET /Sample/Named": func(*resource.Request) resource.Response { return resource.OK(nil) }})
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop()
	files := d.Definitions()
	if got := files[len(files)-1].Name; got != "app-step-counter-2---.yaml" {
		t.Errorf("the app's file is named %q", got)
	}
}

func TestUserMessagesAndHeapTest(t *testing.T) {
	d, c := newDevice(t)
	rec, _ := resource.RecordJSON("DebugMessageConfig", []byte(`{"DebugMessages": true}`))
	d.Call(resource.Put, "/System/Debug/Config", rec)
	q := resource.NewQueue(10)
	cl := resource.NewClient("test", q)
	defer cl.Close()
	d.Do(&resource.Request{Op: resource.Subscribe, Path: "/System/Debug/info", Client: cl})
	rt, err := app.Run(d.Core, funcApp{"logger", func(ctx *app.Context) error {
		ctx.Logf(device.LevelInfo, "hello from %s", "an app")
		ctx.Device().ArmHeapTest(1 << 30) // more than the heap: fails
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop()
	c.Advance(debug.DrainInterval)
	ev := q.Drain(nil)
	if len(ev) != 1 || ev[0].Content.(*debug.Message).Message != "hello from an app" {
		t.Fatalf("debug stream: %+v", ev)
	}
	env, _ := d.Call(resource.Get, "/System/Memory/Heap")
	if got := env.Content.(*system.Heap).SufficiencyTestResult; got != (resource.Pair{Value: system.Failed, Name: "Failed"}) {
		t.Errorf("heap test armed above the heap's size reads %v, want [2 Failed]", got)
	}
}

func ExampleContext_Get() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	d, _ := senseboard.New(senseboard.Config{StateDir: dir})
	defer d.Close()
	done := make(chan string)
	rt, _ := app.Run(d.Core, funcApp{"example", func(ctx *app.Context) error {
		ctx.Get("/Info", func(env resource.Envelope) {
			done <- fmt.Sprint(env.Status, " ", env.URI)
		})
		return nil
	}})
	defer rt.Stop()
	fmt.Println(<-done)
	// Output: HTTP_CODE_OK /net/000123/Info
}

func ExampleContext_Provide() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	d, _ := senseboard.New(senseboard.Config{StateDir: dir})
	defer d.Close()
	definition := []byte(`swagger: '2.0'
info: {version: '1', title: Hello, x-api-state: experimental, x-api-required: false, x-api-type: public}
paths:
  /Sample/Hello:
    get:
      responses:
        200:
          description: A greeting.
          schema: {type: string}
`)
	rt, err := app.Run(d.Core, funcApp{"hello", func(ctx *app.Context) error {
		return ctx.Provide(definition, app.Handlers{
			"GET /Sample/Hello": func(*resource.Request) resource.Response { return resource.OK("hello") },
		})
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Stop()
	env, _ := d.Call(resource.Get, "/sample/hello")
	fmt.Println(env.URI, env.Content)
	// Output: /net/000123/Sample/Hello hello
}

// An app that keeps up with a stream in device time, as the data logger
// does, lets a number of its notifications wait for it in place of the
// topic's limit (a radio link's room), and tells from DroppedBefore how
// many were lost before each one it handles.
func ExampleContext_SubscribeNowWaiting() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	d, _ := senseboard.New(senseboard.Config{StateDir: dir})
	defer d.Close()
	first := make(chan string, 1)
	rt, _ := app.Run(d.Core, funcApp{"keeper", func(ctx *app.Context) error {
		var sub *app.Subscription
		sub, env := ctx.SubscribeNowWaiting("/Meas/Acc/13", 26, func(any) {
			select {
			case first <- fmt.Sprint("lost before the first: ", sub.DroppedBefore()):
			default:
			}
		})
		fmt.Println(env.Status)
		return nil
	}})
	defer rt.Stop()
	fmt.Println(<-first)
	// Output:
	// HTTP_CODE_OK
	// lost before the first: 0
}

// On a virtual clock the app keeps in step with device time: a timer's
// callback and each notification run while the clock reads the time they
// were set off, however far one Advance moves it.
func TestKeepsInStepWithVirtualClock(t *testing.T) {
	d, c := newDevice(t)
	var ticks, timers []time.Duration // owned by the app's goroutine until Advance returns
	rt, err := app.Run(d.Core, funcApp{"step", func(ctx *app.Context) error {
		ctx.Subscribe("/Time", func(any) { ticks = append(ticks, c.Now()) }, nil)
		var again func()
		again = func() {
			timers = append(timers, c.Now())
			ctx.After(300*time.Millisecond, again)
		}
		ctx.After(300*time.Millisecond, again)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop()
	c.Advance(3 * time.Second)
	if got := fmt.Sprint(ticks); got != "[1s 2s 3s]" {
		t.Errorf("notifications of /Time handled at %s, want [1s 2s 3s]", got)
	}
	if got := fmt.Sprint(timers); got != "[300ms 600ms 900ms 1.2s 1.5s 1.8s 2.1s 2.4s 2.7s 3s]" {
		t.Errorf("timers ran at %s, want every 300 ms", got)
	}
}
