package bridge_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"senseboard"
	"senseboard/app"
	"senseboard/examples/stepcounter"
	"senseboard/phone"
	"senseboard/resource"
)

// funcApp is an app made of a function.
type funcApp struct {
	name  string
	start func(ctx *app.Context) error
}

func (a funcApp) Name() string                 { return a.name }
func (a funcApp) Start(ctx *app.Context) error { return a.start(ctx) }

// calcApp adds /Sample/Calc/Sum, a GET with two parameters, and
// /Sample/Calc/Last, what the last sum was.
var calcApp = funcApp{"Calc", func(ctx *app.Context) error {
	var last int32
	return ctx.Provide([]byte(`swagger: '2.0'
info: {version: '1', title: Calculator, x-api-state: experimental, x-api-required: false, x-api-type: public}
paths:
  /Sample/Calc/Sum:
    get:
      description: The sum of two numbers.
      parameters:
        - {name: A, in: query, required: true, type: integer, format: int32}
        - {name: B, in: query, required: true, type: integer, format: int32, minimum: -100, maximum: 100}
      responses:
        200: {description: The sum., schema: {type: integer, format: int32}}
  /Sample/Calc/Last:
    get:
      responses:
        200: {description: The last sum., schema: {type: integer, format: int32}}
`), app.Handlers{
		"GET /Sample/Calc/Sum": func(req *resource.Request) resource.Response {
			last = int32(req.Arg(0).Int() + req.Arg(1).Int())
			return resource.OK(last)
		},
		"GET /Sample/Calc/Last": func(*resource.Request) resource.Response { return resource.OK(last) },
	})
}}

type defParam struct {
	Name     string           `json:"name"`
	In       string           `json:"in"`
	Type     string           `json:"type"`
	Required bool             `json:"required"`
	Minimum  *float64         `json:"minimum"`
	Schema   *json.RawMessage `json:"schema"`
}

type defResource struct {
	Path  string `json:"path"`
	Group string `json:"group"`
	File  string `json:"file"`
	App   bool   `json:"app"`
	Ops   []struct {
		Op     string     `json:"op"`
		Params []defParam `json:"params"`
	} `json:"ops"`
}

func (r *rig) definitions(path string) map[string]defResource {
	r.t.Helper()
	status, body := r.get(path)
	if status != 200 {
		r.t.Fatalf("GET %s: %d %s", path, status, body)
	}
	var list []defResource
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		r.t.Fatalf("GET %s: %v", path, err)
	}
	out := map[string]defResource{}
	for _, d := range list {
		out[d.Path] = d
	}
	return out
}

// A device's definitions come from the device over the radio link, with
// the resources its apps add, and messages built from them work; the
// multi-parameter form of a message works for an app's resources too.
func TestAppDefinitions(t *testing.T) {
	t.Parallel() // waits on real time; runs beside the other slow tests
	var runtimes []*app.Runtime
	t.Cleanup(func() {
		for _, rt := range runtimes {
			rt.Stop()
		}
	})
	r := newRig(t, rigConfig{local: []string{"000123"}, remote: []string{"000200"}, onDemand: true,
		before: func(serial string, d *senseboard.Device) {
			if serial != "000123" {
				return
			}
			rt, err := app.Run(d.Core, stepcounter.New())
			if err != nil {
				t.Fatal(err)
			}
			runtimes = append(runtimes, rt)
		}})
	r.waitFor("000123", "advertising", func(s phone.DeviceState) bool { return s.Advertising })
	r.waitFor("000200", "advertising", func(s phone.DeviceState) bool { return s.Advertising }) // on the radio link

	// asking for the definitions is a use of the device: the bridge connects
	defs := r.definitions("/api/devices/000123/definitions")
	r.connected("000123")
	steps, config := defs["/Sample/StepCounter/Steps"], defs["/Sample/StepCounter/Config"]
	if !steps.App || !config.App || config.Group != "Step counter" || config.File != "app-stepcounter.yaml" {
		t.Errorf("the app's resources: %+v, %+v", steps, config)
	}
	if info, ok := defs["/Info"]; !ok || info.App {
		t.Errorf("/Info: %+v, %v", info, ok)
	}
	// the device's own built-in files: not those of modules it lacks
	builtin := r.definitions("/api/definitions")
	if _, ok := builtin["/Comm/Ble/HRS"]; !ok {
		t.Fatal("the bridge's definitions lack /Comm/Ble/HRS")
	}
	if _, ok := defs["/Comm/Ble/HRS"]; ok {
		t.Error("a device without the HRS module lists /Comm/Ble/HRS")
	}
	if _, ok := builtin["/Sample/StepCounter/Steps"]; ok {
		t.Error("the bridge's built-in definitions list an app's resource")
	}
	// per device: the other device has no step counter
	other := r.definitions("/api/devices/000200/definitions")
	if _, ok := other["/Sample/StepCounter/Steps"]; ok || len(other) == 0 {
		t.Errorf("device 000200 without apps: %d resources, step counter %v", len(other), ok)
	}

	// a message built from the definition: PUT config with the body its schema describes
	var put []defParam
	for _, o := range config.Ops {
		if o.Op == "put" {
			put = o.Params
		}
	}
	if len(put) != 1 || put[0].In != "body" || put[0].Schema == nil || !strings.Contains(string(*put[0].Schema), `"Threshold"`) {
		t.Fatalf("PUT /Sample/StepCounter/Config takes %+v", put)
	}
	msg, _ := json.Marshal(map[string]any{"type": "put", "path": config.Path, "device": "000123", "value": map[string]any{"Threshold": 2.5}})
	if m := r.message(string(msg)); m["response"] != 200.0 {
		t.Errorf("PUT config: %v", m)
	}
	if m := r.message(`{"type": "get", "path": "/Sample/StepCounter/Config", "device": "000123"}`); fmt.Sprint(m["content"]) != "map[Threshold:2.5]" {
		t.Errorf("GET config after PUT: %v", m)
	}
	if m := r.message(`{"type": "put", "path": "/Sample/StepCounter/Config", "device": "000123", "value": {"Threshold": 50}}`); m["response"] != 400.0 {
		t.Errorf("a threshold over the definition's maximum: %v", m)
	}

	// an app that starts now: the bridge learns its resources when a
	// message needs them, and a message with several parameters works
	rt, err := app.Run(r.local["000123"].Core, calcApp)
	if err != nil {
		t.Fatal(err)
	}
	runtimes = append(runtimes, rt)
	if m := r.message(`{"type": "get", "path": "/Sample/Calc/Sum", "device": "000123", "value": {"a": 2, "B": 40}}`); m["response"] != 200.0 || m["content"] != 42.0 {
		t.Errorf("GET sum with two parameters: %v", m)
	}
	for _, tt := range []struct{ value, want string }{
		{`{"A": 2}`, `missing parameter B (it is required); GET /Sample/Calc/Sum takes A (int32), B (int32)`},
		{`{"A": 2, "B": 3, "C": 4}`, `GET /Sample/Calc/Sum has no parameter "C"; it takes A (int32), B (int32)`},
		{`5`, `GET /Sample/Calc/Sum takes 2 parameters: the value is an object {"A": ..., "B": ...}; 5 given`},
	} {
		status, body := r.post("/api/message", `{"type": "get", "path": "/Sample/Calc/Sum", "device": "000123", "value": `+tt.value+`}`)
		if m := decode(t, body); status != 400 || m["type"] != "error" || !strings.Contains(fmt.Sprint(m["error"]), tt.want) {
			t.Errorf("value %s: %d %s; want 400 and %q", tt.value, status, body, tt.want)
		}
	}
	if m := r.message(`{"type": "get", "path": "/Sample/Calc/Sum", "device": "000123", "value": {"A": 2, "B": 400}}`); m["response"] != 400.0 {
		t.Errorf("B over the definition's maximum: %v", m)
	}
	defs = r.definitions("/api/devices/000123/definitions")
	sum := defs["/Sample/Calc/Sum"]
	if !sum.App || sum.File != "app-calc.yaml" || len(sum.Ops) != 1 || len(sum.Ops[0].Params) != 2 {
		t.Fatalf("the new app's resource: %+v", sum)
	}
	// a message built from the definition: every parameter by its name
	value := map[string]any{}
	for i, p := range sum.Ops[0].Params {
		value[p.Name] = 10 * (i + 1)
	}
	msg, _ = json.Marshal(map[string]any{"type": "get", "path": sum.Path, "device": "000123", "value": value})
	if m := r.message(string(msg)); m["response"] != 200.0 || m["content"] != 30.0 {
		t.Errorf("GET %s built from its definition (%s): %v", sum.Path, msg, m)
	}
	if _, ok := defs["/Sample/StepCounter/Steps"]; !ok || !slices.ContainsFunc(sum.Ops[0].Params, func(p defParam) bool { return p.Name == "B" && p.Minimum != nil && *p.Minimum == -100 }) {
		t.Errorf("the definitions after the second app: step counter %v, sum %+v", ok, sum.Ops[0].Params)
	}

	status, body := r.get("/api/devices/999999/definitions")
	if status != 404 || !strings.Contains(body, "no such device") {
		t.Errorf("definitions of an unknown device: %d %s", status, body)
	}
}

// TestDashboardAppResources drives the dashboard in headless Chromium on a
// device that runs two apps: the Resources tab lists the device's own
// resources, the apps' marked as such, and their generated forms work,
// one with a record body and one with two parameters. The screenshot is
// kept with go test -artifacts.
func TestDashboardAppResources(t *testing.T) {
	t.Parallel() // waits on real time; runs beside the other slow tests
	browser := chromium(t)
	var runtimes []*app.Runtime
	t.Cleanup(func() {
		for _, rt := range runtimes {
			rt.Stop()
		}
	})
	r := newRig(t, rigConfig{local: []string{"000123"}, onDemand: true,
		before: func(_ string, d *senseboard.Device) {
			for _, a := range []app.App{stepcounter.New(), calcApp} {
				rt, err := app.Run(d.Core, a)
				if err != nil {
					t.Fatal(err)
				}
				runtimes = append(runtimes, rt)
			}
		}})
	r.waitFor("000123", "advertising", func(s phone.DeviceState) bool { return s.Advertising })
	p := browse(t, r, browser)
	formOf := func(head string) string {
		return `[...document.querySelectorAll('#resource form')].find((f) => f.querySelector('h4').textContent.startsWith('` + head + `'))`
	}
	// send clicks the button of the form whose heading starts with head
	send := func(head string) {
		t.Helper()
		evaluate[bool](p, "send "+head, `(() => { `+formOf(head)+`.querySelector('button').click(); return true; })()`)
	}
	// answer waits for the answer in the form whose heading starts with
	// head and returns it
	answer := func(head string) string {
		t.Helper()
		form := formOf(head)
		p.poll("answer of "+head, form+`.querySelector('pre').textContent.includes('response')`)
		text := evaluate[string](p, "answer of "+head, form+`.querySelector('pre').textContent`)
		return strings.Join(strings.Fields(text), "")
	}
	p.do("load and choose the device",
		chromedp.Navigate(r.srv.URL+"/"),
		chromedp.WaitVisible(`#devices li[data-serial="000123"]`),
		chromedp.Click(`#devices li[data-serial="000123"]`),
		chromedp.WaitVisible(`#current`),
		chromedp.Click(`#tabs button[data-tab="resources"]`),
		chromedp.WaitVisible(`#resources li[data-path="/Sample/StepCounter/Config"][data-app] .badge.app`),
		chromedp.WaitVisible(`#resources li[data-path="/Sample/Calc/Sum"][data-app]`))
	apps := evaluate[[]string](p, "app resources", `[...document.querySelectorAll('#resources li[data-app]')].map((li) => li.dataset.path)`)
	slices.Sort(apps)
	if want := []string{"/Sample/Calc/Last", "/Sample/Calc/Sum", "/Sample/StepCounter/Config", "/Sample/StepCounter/Steps"}; !slices.Equal(apps, want) {
		t.Errorf("resources marked as apps': %q, want %q", apps, want)
	}
	if n := evaluate[int](p, "HRS resources", `document.querySelectorAll('#resources li[data-path="/Comm/Ble/HRS"]').length`); n != 0 {
		t.Errorf("a device without the HRS module shows /Comm/Ble/HRS %d times", n)
	}

	// the step counter's configuration: a record body, prefilled from its schema
	p.do("config form",
		chromedp.Click(`#resources li[data-path="/Sample/StepCounter/Config"]`),
		chromedp.WaitVisible(`#resource form textarea`))
	prefilled := evaluate[string](p, "config body", `document.querySelector('#resource form textarea').value`)
	if !strings.Contains(prefilled, `"Threshold"`) {
		t.Errorf("PUT body prefilled with %q, want the record's Threshold", prefilled)
	}
	p.do("PUT config", chromedp.SetValue(`#resource form textarea`, `{"Threshold": 2.5}`))
	send("PUT")
	if got := answer("PUT"); !strings.Contains(got, `"response":200`) {
		t.Errorf("PUT config from the form: %s", got)
	}
	send("GET")
	if got := answer("GET"); !strings.Contains(got, `"content":{"Threshold":2.5}`) {
		t.Errorf("GET config from the form after the PUT: %s", got)
	}

	// the calculator's sum: a field per parameter, every field sent
	p.do("sum form",
		chromedp.Click(`#resources li[data-path="/Sample/Calc/Sum"]`),
		chromedp.WaitVisible(`#resource form input`))
	evaluate[bool](p, "fill the sum form", `(() => {
		const f = document.querySelector('#resource form');
		const [a, b] = f.querySelectorAll('input');
		a.value = '2'; b.value = '40';
		f.querySelector('button').click();
		return true;
	})()`)
	if got := answer("GET"); !strings.Contains(got, `"response":200`) || !strings.Contains(got, `"content":42`) {
		t.Errorf("GET /Sample/Calc/Sum from the form with 2 and 40: %s", got)
	}
	p.shot("app-resources.png")
	if m := r.message(`{"type": "get", "path": "/Sample/Calc/Last", "device": "000123"}`); m["content"] != 42.0 {
		t.Errorf("the app's last sum after the form: %v", m)
	}
}
