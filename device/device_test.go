package device_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"senseboard/api"
	"senseboard/clock"
	"senseboard/device"
	"senseboard/profile"
	"senseboard/provider/info"
	"senseboard/provider/timesvc"
	"senseboard/resource"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testProvider serves the resources of testdata/test.yaml and records what it saw.
type testProvider struct {
	mu       sync.Mutex
	args     []resource.Value
	resets   int
	offs     int
	topic    *resource.Topic
	unsubbed int
}

func (p *testProvider) Register(d *device.Core) error {
	record := func(req *resource.Request) resource.Response {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.args = append([]resource.Value(nil), req.Args...)
		return resource.OK(map[string]any{"uri": req.URI})
	}
	d.HandleFunc("/Test/Value/{Index}", resource.Get, record)
	d.HandleFunc("/Test/Value/{Index}", resource.Put, func(req *resource.Request) resource.Response {
		record(req)
		return resource.OK(nil)
	})
	d.HandleSource("/Test/Level/{Level}", p)
	return nil
}

func (p *testProvider) Subscribe(t *resource.Topic, req *resource.Request) resource.Response {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.topic = t
	return resource.OK(nil)
}

func (p *testProvider) Unsubscribed(t *resource.Topic) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unsubbed++
}

func (p *testProvider) Reset()    { p.mu.Lock(); p.resets++; p.mu.Unlock() }
func (p *testProvider) PowerOff() { p.mu.Lock(); p.offs++; p.mu.Unlock() }

type fixture struct {
	d    *device.Core
	clk  *clock.Virtual
	test *testProvider
	time *timesvc.Provider
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	set, err := api.LoadFiles("info.yaml", "time.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("testdata/test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := api.Parse("test.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Add(f); err != nil {
		t.Fatal(err)
	}
	p := profile.Default()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	inf, err := info.New(p)
	if err != nil {
		t.Fatal(err)
	}
	fx := &fixture{clk: clock.NewVirtual(), test: &testProvider{}, time: timesvc.New()}
	fx.d, err = device.New(device.Config{Profile: p, Clock: fx.clk, Definitions: set,
		Providers: []device.Provider{inf, fx.time, fx.test}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.d.Close() })
	return fx
}

func (fx *fixture) do(t testing.TB, req *resource.Request) resource.Envelope {
	t.Helper()
	env, err := fx.d.Do(req)
	if err != nil {
		t.Fatalf("Do(%s %s): %v", req.Op, req.Path, err)
	}
	return env
}

func rec(t testing.TB, name, text string) resource.Value {
	t.Helper()
	v, err := resource.RecordJSON(name, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func jsonValue(t testing.TB, text string) resource.Value {
	t.Helper()
	v, err := resource.JSON([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDoEnvelope(t *testing.T) {
	fx := newFixture(t)
	tests := []struct {
		name    string
		req     resource.Request
		status  resource.Status
		uri     string
		errText string // substring of the error field; "" means no error field
	}{
		{"get info", resource.Request{Op: resource.Get, Path: "/Info"}, 200, "/net/000123/Info", ""},
		{"lower case without slash", resource.Request{Op: resource.Get, Path: "info"}, 200, "/net/000123/Info", ""},
		{"unknown path", resource.Request{Op: resource.Get, Path: "/Nope"}, 404, "/net/000123/Nope", "no resource at /Nope"},
		{"wrong operation", resource.Request{Op: resource.Put, Path: "/info"}, 405, "/net/000123/Info", "allowed: GET"},
		{"dot dot", resource.Request{Op: resource.Get, Path: "/Info/../Time"}, 400, "", `".." segment`},
		{"empty segment", resource.Request{Op: resource.Get, Path: "/Info//App"}, 400, "", "empty segment"},
		{"non UTF-8", resource.Request{Op: resource.Get, Path: "/Info\xff"}, 400, "", "UTF-8"},
		{"too many parameters", resource.Request{Op: resource.Get, Path: "/Info", Params: []resource.Value{resource.Uint8(1)}}, 400, "/net/000123/Info", "takes no parameters"},
		{"path and query parameters", resource.Request{Op: resource.Get, Path: "/test/value/2",
			Params: []resource.Value{resource.Uint32(7), resource.Uint8(16)}}, 200, "/net/000123/Test/Value/2", ""},
		{"placeholder filled from params", resource.Request{Op: resource.Get, Path: "/Test/Value/{Index}",
			Params: []resource.Value{resource.Uint8(3), resource.Uint32(7), resource.Uint8(16)}}, 200, "/net/000123/Test/Value/3", ""},
		{"placeholder without value", resource.Request{Op: resource.Get, Path: "/Test/Value/{Index}"}, 400, "", "no value for path parameter Index"},
		{"path parameter over maximum", resource.Request{Op: resource.Get, Path: "/Test/Value/4",
			Params: []resource.Value{resource.Uint32(7), resource.Uint8(16)}}, 400, "", "Index: 4 is out of range (uint8, 0..3)"},
		{"path parameter not an integer", resource.Request{Op: resource.Get, Path: "/Test/Value/x"}, 400, "", `Index "x" is not an integer`},
		{"path parameter too big for its type", resource.Request{Op: resource.Get, Path: "/Test/Value/300"}, 400, "", "does not fit uint8"},
		{"missing parameter", resource.Request{Op: resource.Get, Path: "/Test/Value/1",
			Params: []resource.Value{resource.Uint32(7)}}, 400, "", "missing parameter Len (uint8, 1..128)"},
		{"out of declared range", resource.Request{Op: resource.Get, Path: "/Test/Value/1",
			Params: []resource.Value{resource.Uint32(7), resource.Uint8(200)}}, 400, "", "Len: 200 is out of range (uint8, 1..128)"},
		{"wrong type", resource.Request{Op: resource.Get, Path: "/Test/Value/1",
			Params: []resource.Value{resource.String("7"), resource.Uint8(1)}}, 400, "", "parameter Addr takes uint32"},
		{"negative for unsigned", resource.Request{Op: resource.Get, Path: "/Test/Value/1",
			Params: []resource.Value{resource.Int64(-1), resource.Uint8(1)}}, 400, "", "does not fit uint32"},
		{"wider type in range", resource.Request{Op: resource.Get, Path: "/Test/Value/1",
			Params: []resource.Value{resource.Int64(7), resource.Int64(1)}}, 200, "/net/000123/Test/Value/1", ""},
		{"record with folded keys", resource.Request{Op: resource.Put, Path: "/Test/Value/1",
			Params: []resource.Value{rec(t, "FilterConfig", `{"low-pass": 100, "high_pass": null}`)}}, 200, "/net/000123/Test/Value/1", ""},
		{"record of another type", resource.Request{Op: resource.Put, Path: "/Test/Value/1",
			Params: []resource.Value{rec(t, "LedState", `{"IsOn": true}`)}}, 400, "", "is a FilterConfig record; LedState given"},
		{"record unknown field", resource.Request{Op: resource.Put, Path: "/Test/Value/1",
			Params: []resource.Value{rec(t, "FilterConfig", `{"Bandwidth": 1}`)}}, 400, "", "unknown field Bandwidth; allowed: HighPass, LowPass"},
		{"record enum", resource.Request{Op: resource.Put, Path: "/Test/Value/1",
			Params: []resource.Value{rec(t, "FilterConfig", `{"LowPass": 41}`)}}, 400, "", "LowPass should be one of [40 100 150]"},
		{"record with a field twice", resource.Request{Op: resource.Put, Path: "/Test/Value/1",
			Params: []resource.Value{rec(t, "FilterConfig", `{"LowPass": 40, "LowPass": 100}`)}}, 400, "", `config: field "LowPass" given twice`},
		{"untyped JSON with a field twice", resource.Request{Op: resource.Put, Path: "/Test/Value/1",
			Params: []resource.Value{jsonValue(t, `{"HighPass": 1, "LowPass": 40, "LowPass": 100}`)}}, 400, "", `field "LowPass" given twice`},
		{"untyped JSON record", resource.Request{Op: resource.Put, Path: "/Test/Value/1",
			Params: []resource.Value{jsonValue(t, `{"LowPass": 40}`)}}, 200, "/net/000123/Test/Value/1", ""},
		{"untyped JSON of the wrong kind", resource.Request{Op: resource.Put, Path: "/Time",
			Params: []resource.Value{jsonValue(t, `"soon"`)}}, 400, "", "takes int64"},
		{"body too large", resource.Request{Op: resource.Put, Path: "/Test/Value/1",
			Params: []resource.Value{rec(t, "FilterConfig", `{"LowPass": 40`+strings.Repeat(" ", api.MaxBody)+`}`)}}, 413, "", "at most 4096"},
		{"subscribe without client", resource.Request{Op: resource.Subscribe, Path: "/Time"}, 400, "/net/000123/Time", "needs a client"},
		{"subscription path get", resource.Request{Op: resource.Get, Path: "/Time/Subscription"}, 405, "/net/000123/Time/Subscription", "POST (subscribe)"},
		{"enum path parameter in any case", resource.Request{Op: resource.Subscribe, Path: "/Test/Level/WARNING",
			Client: resource.NewClient("c", resource.NewQueue(1))}, 200, "/net/000123/Test/Level/warning", ""},
		{"enum path parameter not allowed", resource.Request{Op: resource.Subscribe, Path: "/Test/Level/debug"}, 400, "", "debug is not allowed; allowed: fatal, error, warning"},
	}
	for _, tt := range tests {
		env := fx.do(t, &tt.req)
		if env.Status != tt.status {
			t.Errorf("%s: status %d (%s), want %d", tt.name, env.Status, env.Error, tt.status)
			continue
		}
		if tt.uri != "" && env.URI != tt.uri {
			t.Errorf("%s: uri %s, want %s", tt.name, env.URI, tt.uri)
		}
		if tt.errText == "" && env.Error != "" || !strings.Contains(env.Error, tt.errText) {
			t.Errorf("%s: error %q, want containing %q", tt.name, env.Error, tt.errText)
		}
		if !env.Status.OK() && env.Content != nil {
			t.Errorf("%s: error envelope has content %v", tt.name, env.Content)
		}
		if env.Op != tt.req.Op {
			t.Errorf("%s: operation %s, want %s", tt.name, env.Op, tt.req.Op)
		}
	}
}

func TestBoundArgs(t *testing.T) {
	fx := newFixture(t)
	fx.do(t, &resource.Request{Op: resource.Put, Path: "/Test/Value/{Index}",
		Params: []resource.Value{resource.Uint8(2), rec(t, "FilterConfig", `{"LOW_PASS": 150, "highPass": 0.5}`)}})
	args := fx.test.args
	if len(args) != 2 || args[0].Type() != resource.TypeUint8 || args[0].Uint() != 2 {
		t.Fatalf("args %v", args)
	}
	if args[1].Type() != resource.TypeRecord || args[1].Name() != "FilterConfig" {
		t.Fatalf("body %v (%s)", args[1], args[1].Type())
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(args[1].Str()), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg["LowPass"] != 150.0 || cfg["HighPass"] != 0.5 || len(cfg) != 2 {
		t.Errorf("canonical record %v, want keys spelled as declared", cfg)
	}
	fx.do(t, &resource.Request{Op: resource.Get, Path: "/test/value/1", Params: []resource.Value{resource.Int64(5), resource.Int64(9)}})
	args = fx.test.args
	if args[1].Type() != resource.TypeUint32 || args[2].Type() != resource.TypeUint8 || args[2].Uint() != 9 {
		t.Errorf("values not converted to declared types: %v %s %s", args, args[1].Type(), args[2].Type())
	}
}

func TestEnvelopeJSON(t *testing.T) {
	fx := newFixture(t)
	env := fx.do(t, &resource.Request{Op: resource.Get, Path: "/info"})
	b, err := env.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("envelope is not JSON: %v\n%s", err, b)
	}
	for _, k := range []string{"response", "responsestring", "operation", "uri", "content", "querytimems", "querytimens"} {
		if _, ok := m[k]; !ok {
			t.Errorf("envelope lacks %s: %s", k, b)
		}
	}
	if string(m["responsestring"]) != `"HTTP_CODE_OK"` || string(m["operation"]) != `"get"` {
		t.Errorf("envelope %s", b)
	}
	var content map[string]any
	json.Unmarshal(m["content"], &content)
	if v, ok := content["brandName"]; !ok || v != nil {
		t.Errorf("nullable brandName must be present as null: %s", m["content"])
	}
	env = fx.do(t, &resource.Request{Op: resource.Put, Path: "/time", Params: []resource.Value{resource.Int64(5)}})
	b, _ = env.AppendJSON(nil)
	if strings.Contains(string(b), `"content"`) || strings.Contains(string(b), `"error"`) {
		t.Errorf("PUT envelope %s: no content, no error", b)
	}
	env = fx.do(t, &resource.Request{Op: resource.Get, Path: "/nope"})
	b, _ = env.AppendJSON(nil)
	if !strings.Contains(string(b), `"response":404,"responsestring":"HTTP_CODE_NOT_FOUND"`) || !strings.Contains(string(b), `"error":"no resource at /nope"`) {
		t.Errorf("404 envelope %s", b)
	}
}

func TestMissingHandlerOrDefinitionRefusesToStart(t *testing.T) {
	set, err := api.LoadFiles("info.yaml", "time.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := profile.Default()
	p.Validate()
	inf, _ := info.New(p)
	_, err = device.New(device.Config{Profile: p, Definitions: set, Providers: []device.Provider{inf}})
	if err == nil || !strings.Contains(err.Error(), "GET /Time is defined in api/time.yaml but has no handler") {
		t.Errorf("missing handler: %v", err)
	}
	extra := providerFunc(func(d *device.Core) error {
		d.HandleFunc("/Info/Extra", resource.Get, func(*resource.Request) resource.Response { return resource.OK(nil) })
		return nil
	})
	_, err = device.New(device.Config{Profile: p, Definitions: set, Providers: []device.Provider{inf, timesvc.New(), extra}})
	if err == nil || !strings.Contains(err.Error(), "handler for GET /Info/Extra has no interface definition") {
		t.Errorf("handler without definition: %v", err)
	}
}

type providerFunc func(d *device.Core) error

func (f providerFunc) Register(d *device.Core) error { return f(d) }

func TestResetEndsSubscriptionsAndRestartsTime(t *testing.T) {
	fx := newFixture(t)
	q := resource.NewQueue(16)
	c := resource.NewClient("c", q)
	fx.clk.Advance(5 * time.Second)
	fx.do(t, &resource.Request{Op: resource.Put, Path: "/Time", Params: []resource.Value{resource.Int64(1_700_000_000_000_000)}})
	if env := fx.do(t, &resource.Request{Op: resource.Subscribe, Path: "/Test/Level/error", Client: c}); env.Status != 200 {
		t.Fatal(env.Error)
	}
	if fx.d.RelativeTime() != 5000 {
		t.Fatalf("relative time %d", fx.d.RelativeTime())
	}
	fx.d.SwitchMode(device.ModeApplication)
	if m, ok := fx.d.NextMode(); !ok || m != device.ModeApplication {
		t.Fatalf("next mode %v %v", m, ok)
	}
	fx.clk.Advance(device.SwitchDelay)
	if _, ok := fx.d.NextMode(); ok {
		t.Error("switch still pending")
	}
	ev := q.Drain(nil)
	if len(ev) != 1 || ev[0].Ended != resource.EndReset {
		t.Errorf("events after reset %+v, want one end by reset", ev)
	}
	if fx.test.resets != 1 || fx.test.unsubbed != 1 {
		t.Errorf("resets %d, unsubscribed %d", fx.test.resets, fx.test.unsubbed)
	}
	if fx.d.RelativeTime() != 0 {
		t.Errorf("relative time after reset %d", fx.d.RelativeTime())
	}
	env := fx.do(t, &resource.Request{Op: resource.Get, Path: "/Time"})
	if env.Content.(int64) != 0 {
		t.Errorf("UTC after reset %v, want 1970 plus time since reset (0)", env.Content)
	}
	c.Close()
}

func TestPowerOffAndWake(t *testing.T) {
	fx := newFixture(t)
	q := resource.NewQueue(4)
	c := resource.NewClient("c", q)
	fx.do(t, &resource.Request{Op: resource.Subscribe, Path: "/Time", Client: c})
	fx.d.SwitchMode(device.ModeFullPowerOff)
	fx.clk.Advance(time.Second)
	if fx.d.Mode() != device.ModeFullPowerOff {
		t.Fatalf("mode %v", fx.d.Mode())
	}
	if _, err := fx.d.Do(&resource.Request{Op: resource.Get, Path: "/Info"}); !errors.Is(err, device.ErrOff) {
		t.Errorf("Do while off: %v, want ErrOff", err)
	}
	ev := q.Drain(nil)
	if len(ev) != 1 || ev[0].Ended != resource.EndPowerOff {
		t.Errorf("events %+v, want one end by power off", ev)
	}
	if fx.test.offs != 1 {
		t.Errorf("PowerOff calls %d", fx.test.offs)
	}
	if !fx.d.Wake() || fx.d.Mode() != device.ModeApplication || fx.d.Wake() {
		t.Error("Wake from off must succeed once")
	}
	if env := fx.do(t, &resource.Request{Op: resource.Get, Path: "/Info"}); env.Status != 200 {
		t.Errorf("after wake: %d", env.Status)
	}
	c.Close()
}

func TestUpdateModeAnswersNothing(t *testing.T) {
	fx := newFixture(t)
	fx.d.SwitchMode(device.ModeFwUpdate)
	fx.clk.Advance(time.Second)
	if fx.d.Mode() != device.ModeFwUpdate {
		t.Fatalf("mode %v", fx.d.Mode())
	}
	for _, path := range []string{"/info", "/System/Mode", "/Time"} {
		_, err := fx.d.Do(&resource.Request{Op: resource.Get, Path: path})
		if !errors.Is(err, device.ErrUpdateMode) || !errors.Is(err, device.ErrOff) {
			t.Errorf("GET %s in update mode: %v, want no answer (ErrUpdateMode)", path, err)
		}
	}
	fx.d.Reset()
	if env := fx.do(t, &resource.Request{Op: resource.Get, Path: "/Info"}); env.Status != 200 {
		t.Errorf("GET /Info after the reset into the application: %d", env.Status)
	}
}

func TestTopicOf(t *testing.T) {
	fx := newFixture(t)
	q := resource.NewQueue(4)
	c := resource.NewClient("c", q)
	fx.do(t, &resource.Request{Op: resource.Post, Path: "/test/level/FATAL/subscription", Client: c})
	topic, err := fx.d.TopicOf("/Test/Level/{Level}", resource.String("fatal"))
	if err != nil || topic == nil || topic.URI() != "/net/000123/Test/Level/fatal" {
		t.Fatalf("TopicOf = %v, %v", topic, err)
	}
	topic.Publish("boom")
	if ev := q.Drain(nil); len(ev) != 1 || ev[0].Content != "boom" {
		t.Errorf("notifications %+v", ev)
	}
	env := fx.do(t, &resource.Request{Op: resource.Delete, Path: "/Test/Level/fatal/Subscription", Client: c})
	if env.Status != 200 || env.URI != "/net/000123/Test/Level/fatal/Subscription" {
		t.Errorf("unsubscribe %d %s", env.Status, env.URI)
	}
	c.Close()
}

func FuzzDo(f *testing.F) {
	f.Add(uint8(1), "/Info", "uint8", "1", "")
	f.Add(uint8(2), "/Test/Value/{Index}", "uint8", "2", `{"low-pass":40}`)
	f.Add(uint8(1), "/Test/Value/1", "uint32", "0x10", `7`)
	f.Add(uint8(5), "/Test/Level/error", "string", "x", "")
	f.Add(uint8(3), "/Time/Subscription", "int64", "-1", "null")
	fx := newFixture(f)
	f.Fuzz(func(t *testing.T, op uint8, path, typ, text, js string) {
		var params []resource.Value
		if v, err := resource.ParseValue(typ, text); err == nil {
			params = append(params, v)
		}
		if v, err := resource.JSON([]byte(js)); err == nil {
			params = append(params, v)
		}
		q := resource.NewQueue(1)
		c := resource.NewClient("fuzz", q)
		defer c.Close()
		env, err := fx.d.Do(&resource.Request{Op: resource.Op(op % 8), Path: path, Params: params, Client: c})
		if err != nil {
			t.Fatalf("Do: %v", err)
		}
		if env.Status.OK() == (env.Error != "") {
			t.Fatalf("status %d with error %q", env.Status, env.Error)
		}
		if _, err := env.AppendJSON(nil); err != nil {
			t.Fatalf("envelope does not encode: %v", err)
		}
	})
}

// A module left to an app is routed only once it is served, and is served
// once.
func TestServeModule(t *testing.T) {
	set, err := api.LoadFiles("info.yaml", "system_memory.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := profile.Default()
	p.Modules.Heap = true
	p.Validate()
	inf, _ := info.New(p)
	d, err := device.New(device.Config{Profile: p, Definitions: set, Providers: []device.Provider{inf}, AppModules: []string{"heap"}})
	if err != nil {
		t.Fatalf("a module left to an app needs no handler to start: %v", err)
	}
	defer d.Close()
	if err := d.ServeModule("NUS"); err == nil {
		t.Error("ServeModule of a module not left to an app")
	}
	d.HandleFunc("/System/Memory/Heap", resource.Get, func(*resource.Request) resource.Response { return resource.OK(nil) })
	if err := d.Commit(); err == nil || !strings.Contains(err.Error(), "handler for GET /System/Memory/Heap has no interface definition") {
		t.Errorf("a handler of a module not yet served: %v", err)
	}
	if err := d.ServeModule("Heap"); err != nil {
		t.Fatal(err)
	}
	if err := d.ServeModule("Heap"); err == nil {
		t.Error("a module served twice")
	}
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	if env, _ := d.Call(resource.Get, "/System/Memory/Heap"); env.Status != resource.StatusOK {
		t.Errorf("served: %d", env.Status)
	}
}

// A device on a clock of its own, made when its Config gave none, closes
// it, and so does New when it fails after making it: the calls pending on
// it are dropped. A clock it was given is its giver's to close.
func TestCloseClosesTheDevicesOwnClock(t *testing.T) {
	set, err := api.LoadFiles("info.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := profile.Default()
	p.Validate()
	given := clock.NewReal()
	defer given.Close()
	for _, tt := range []struct {
		name  string
		clock clock.Clock
		own   bool
	}{
		{"own", nil, true},
		{"given", given, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inf, _ := info.New(p)
			d, err := device.New(device.Config{Profile: p, Clock: tt.clock, Definitions: set, Providers: []device.Provider{inf}})
			if err != nil {
				t.Fatal(err)
			}
			tm := d.Clock().AfterFunc(time.Hour, func() {})
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if pending := tm.Stop(); pending == tt.own {
				t.Errorf("after Close a call an hour away was pending %v on the device's clock (its own %v)", pending, tt.own)
			}
		})
		t.Run(tt.name+", New failed", func(t *testing.T) {
			inf, _ := info.New(p)
			refused := &schedulingRefusal{}
			_, err := device.New(device.Config{Profile: p, Clock: tt.clock, Definitions: set, Providers: []device.Provider{inf, refused}})
			if !errors.Is(err, errRefused) {
				t.Fatalf("New: %v, want %v", err, errRefused)
			}
			if pending := refused.tm.Stop(); pending == tt.own {
				t.Errorf("after a failed New a call an hour away was pending %v on the device's clock (its own %v)", pending, tt.own)
			}
		})
	}
}

var errRefused = errors.New("refused")

// schedulingRefusal is a provider that schedules a call an hour away on the
// device's clock as it registers, then refuses to register.
type schedulingRefusal struct{ tm clock.Timer }

func (p *schedulingRefusal) Register(d *device.Core) error {
	p.tm = d.Clock().AfterFunc(time.Hour, func() {})
	return errRefused
}
