// Package device owns a device's core: the router built from the interface
// definitions and the providers' handlers, request execution (routing,
// binding, the envelope), the subscription hub, relative time, debug message
// plumbing, and the lifecycle of modes (Application, FullPowerOff,
// FwUpdateMode) and resets. Resources themselves live in provider packages;
// the package senseboard assembles a complete device.
package device

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"senseboard/api"
	"senseboard/clock"
	"senseboard/profile"
	"senseboard/resource"
)

// A Provider serves a group of resources.
type Provider interface {
	// Register installs the provider's handlers with Handle and HandleSource.
	Register(d *Core) error
}

// A Resetter is a Provider with volatile state. Reset restores it to its
// power-on values; it runs at every reset and wake-up, after every
// subscription has ended.
type Resetter interface {
	Reset()
}

// A PowerOffer is a Provider that acts when the device turns off (stops
// timers, drops connections). It runs after every subscription has ended.
type PowerOffer interface {
	PowerOff()
}

// A Closer is a Provider that holds resources to release when the device closes.
type Closer interface {
	Close() error
}

// Mode is a system mode of /System/Mode.
type Mode uint8

// The modes the device implements.
const (
	ModeFullPowerOff Mode = 1
	ModeApplication  Mode = 5
	ModeFwUpdate     Mode = 12
)

func (m Mode) String() string {
	switch m {
	case ModeFullPowerOff:
		return "FullPowerOff"
	case ModeApplication:
		return "Application"
	case ModeFwUpdate:
		return "FwUpdateMode"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ErrOff is returned by Do while the device is in FullPowerOff: it does not
// answer at all. ErrUpdateMode is one too.
var ErrOff = errors.New("device is off (FullPowerOff); it wakes on its configured wake-up source")

// ErrUpdateMode is returned by Do while the device is in firmware update
// mode: its bootloader answers nothing of the resource interface, as a
// device that is off. errors.Is(ErrUpdateMode, ErrOff) holds.
var ErrUpdateMode error = updateModeError{}

type updateModeError struct{}

func (updateModeError) Error() string {
	return "device is in firmware update mode; its bootloader answers no request, and it returns to the application after its update timeout or a power cycle"
}

func (updateModeError) Is(target error) bool { return target == ErrOff }

// Config configures a device.
type Config struct {
	// Profile holds the build settings; nil means the defaults.
	Profile *profile.Profile
	// Clock is the device's time; nil means real time, on a clock of the
	// device's own, which Close closes.
	Clock clock.Clock
	// Definitions are the interface definitions; nil means the embedded ones.
	Definitions *api.Set
	// Providers serve the resources.
	Providers []Provider
	// AppModules are modules (the x-module of definition files) whose
	// resources an app serves once it runs, as the firmware's modules
	// serve theirs (app.Context.Serve): their operations are routed, and
	// must have handlers, from ServeModule on.
	AppModules []string
	// ClockDrift is the device oscillator's rate error, in parts per million
	// (positive: the device's time runs fast). The device's relative time,
	// timestamps and UTC time advance by 1 + ClockDrift/1e6 seconds per
	// second of the clock; 0 is a perfect oscillator.
	ClockDrift float64
}

// Core is a device's core: what every resource goes through, whichever
// providers serve it. The package senseboard's Device is a core with every
// provider and the parts they model.
type Core struct {
	// the relative time's, read for every notification of every stream,
	// together in the first cache line
	resetAt  atomic.Int64 // clock reading of the last reset, ns
	driftPPM float64      // oscillator rate error, ppm, as configured

	prof     *profile.Profile
	clock    clock.Clock
	ownClock *clock.Real // clock when the device made it, for Close to close
	defs     *api.Set
	prefix   string
	hub      *resource.Hub
	started  time.Duration // clock reading when the device was made

	router atomic.Pointer[resource.Router]

	mu        sync.Mutex     // guards registration and lifecycle
	regs      []registration // since the last Commit that succeeded
	extra     []*api.File    // definitions added after construction (apps)
	regErr    []error
	providers []Provider
	unserved  map[string]bool // of AppModules, lower case: not routed until ServeModule

	mode     atomic.Uint32
	next     atomic.Uint32 // pending mode, 0 when none
	switchMu sync.Mutex
	pending  clock.Timer

	logMu    sync.RWMutex
	log      func(group Group, level Level, msg string)
	heapTest func(minFree uint32)

	lifeMu    sync.Mutex
	lifecycle []func(Event)

	busy     atomic.Bool  // the request pool is exhausted
	timedOut atomic.Int64 // requests that timed out since the last reset
}

type registration struct {
	pattern string
	op      resource.Op
	h       resource.Handler
}

// New makes a device's core with the providers of cfg and starts it in
// Application mode.
func New(cfg Config) (*Core, error) {
	p := cfg.Profile
	if p == nil {
		p = profile.Default()
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	defs := cfg.Definitions
	if defs == nil {
		var err error
		if defs, err = api.Embedded(); err != nil {
			return nil, err
		}
	}
	c := cfg.Clock
	var own *clock.Real
	if c == nil {
		own = clock.NewReal()
		c = own
	}
	d := &Core{
		prof:     p,
		clock:    c,
		ownClock: own,
		defs:     defs,
		prefix:   "/net/" + p.Serial,
		hub:      resource.NewHub(p.SubscriptionLimit),
		driftPPM: cfg.ClockDrift,
	}
	for _, m := range cfg.AppModules {
		if d.unserved == nil {
			d.unserved = map[string]bool{}
		}
		d.unserved[strings.ToLower(m)] = true
	}
	d.started = c.Now()
	d.resetAt.Store(int64(d.started))
	d.mode.Store(uint32(ModeApplication))
	fail := func(err error) (*Core, error) {
		if own != nil {
			own.Close()
		}
		return nil, err
	}
	for _, pr := range cfg.Providers {
		if err := pr.Register(d); err != nil {
			return fail(fmt.Errorf("register %T: %w", pr, err))
		}
		d.providers = append(d.providers, pr)
	}
	if err := d.Commit(); err != nil {
		return fail(err)
	}
	return d, nil
}

// Profile returns the device's profile. It must not be modified.
func (d *Core) Profile() *profile.Profile { return d.prof }

// Serial returns the device's serial number.
func (d *Core) Serial() string { return d.prof.Serial }

// Clock returns the device's clock.
func (d *Core) Clock() clock.Clock { return d.clock }

// Hub returns the device's subscription hub.
func (d *Core) Hub() *resource.Hub { return d.hub }

// Definitions returns the device's interface definitions, the files of
// disabled modules excluded and resources added by apps included.
func (d *Core) Definitions() []*api.File {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*api.File
	for _, f := range d.defs.Files {
		if d.enabled(f) {
			out = append(out, f)
		}
	}
	return append(out, d.extra...)
}

// URIPrefix returns the prefix of the device's URIs, /net/<serial>.
func (d *Core) URIPrefix() string { return d.prefix }

// SinceReset returns the device's own time since the last reset: the clock's
// time since then, as the device's oscillator (with its drift) counts it.
func (d *Core) SinceReset() time.Duration {
	return d.Local(d.clock.Now() - time.Duration(d.resetAt.Load()))
}

// Local converts a span of clock time to the device oscillator's count of
// it, drift included.
func (d *Core) Local(span time.Duration) time.Duration {
	if d.driftPPM == 0 {
		return span
	}
	return span + time.Duration(float64(span)*(d.driftPPM*1e-6))
}

// ClockDrift returns the device oscillator's rate error, ppm.
func (d *Core) ClockDrift() float64 { return d.driftPPM }

// RelativeTimeAt returns the relative time at clock reading t; a reading
// before the last reset (a sample taken before a clock reset) is 0.
func (d *Core) RelativeTimeAt(t time.Duration) uint32 {
	return RelativeTime(d.Local(max(t-d.ResetTime(), 0)))
}

// ResetTime returns the clock reading of the last reset.
func (d *Core) ResetTime() time.Duration { return time.Duration(d.resetAt.Load()) }

// RelativeTime returns the relative time of the specification: milliseconds
// since the last reset, wrapping at 2^32.
func (d *Core) RelativeTime() uint32 { return RelativeTime(d.SinceReset()) }

// RelativeTime converts a time since reset to the specification's relative
// time: whole milliseconds, wrapping at 2^32.
func RelativeTime(sinceReset time.Duration) uint32 {
	return uint32(uint64(sinceReset/time.Millisecond) & 0xFFFFFFFF)
}

// Handle registers h for op on the resource pattern of an interface definition.
func (d *Core) Handle(pattern string, op resource.Op, h resource.Handler) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.regs = append(d.regs, registration{pattern, op, h})
}

// HandleFunc registers f for op on pattern.
func (d *Core) HandleFunc(pattern string, op resource.Op, f func(*resource.Request) resource.Response) {
	d.Handle(pattern, op, resource.HandlerFunc(f))
}

// HandleSource registers src as the source of the subscribable resource at
// pattern: SUBSCRIBE (POST on its Subscription child) and unsubscribe go to
// the device's hub, which asks src.
func (d *Core) HandleSource(pattern string, src resource.Source) {
	d.Handle(pattern, resource.Subscribe, subscriptionHandler{d.hub, src})
}

type subscriptionHandler struct {
	hub *resource.Hub
	src resource.Source
}

func (s subscriptionHandler) Serve(req *resource.Request) resource.Response {
	if req.Match.Op == resource.Unsubscribe {
		return s.hub.Unsubscribe(req, req.URI)
	}
	_, resp := s.hub.Subscribe(req, req.URI, s.src)
	return resp
}

// AddDefinitions adds the definitions of an app's own resources. Their
// handlers are registered with Handle, then Commit makes them reachable.
func (d *Core) AddDefinitions(f *api.File) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range f.Resources {
		if d.defs.Resource(r.Path) != nil {
			return fmt.Errorf("api/%s: path %s is already a device resource", f.Name, r.Path)
		}
		for _, o := range d.extra {
			for _, or := range o.Resources {
				if strings.EqualFold(or.Path, r.Path) {
					return fmt.Errorf("api/%s: path %s is already defined in %s", f.Name, r.Path, o.Name)
				}
			}
		}
	}
	d.extra = append(d.extra, f)
	return nil
}

// Commit adds the handlers registered since the last Commit to the
// router. Every defined operation must have a handler and every handler a
// definition; otherwise nothing changes and the error lists the mismatches.
func (d *Core) Commit() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	rt := resource.NewRouter(d.prefix)
	handled := map[string]bool{}
	if old := d.router.Load(); old != nil {
		rt = old.Clone()
		for _, r := range rt.Routes() {
			for _, op := range r.Ops() {
				handled[r.Pattern()+" "+op.String()] = true
			}
		}
	}
	var errs []error
	defined := map[string]*api.Resource{}
	var files []*api.File
	for _, f := range d.defs.Files {
		if d.enabled(f) && !d.unserved[strings.ToLower(f.Module)] {
			files = append(files, f)
		}
	}
	files = append(files, d.extra...)
	for _, f := range files {
		for _, r := range f.Resources {
			defined[r.Path] = r
		}
	}
	for _, reg := range d.regs {
		res := defined[reg.pattern]
		if res == nil || res.Ops[reg.op] == nil {
			errs = append(errs, fmt.Errorf("handler for %s %s has no interface definition", strings.ToUpper(reg.op.String()), reg.pattern))
			continue
		}
		var r *resource.Route
		var err error
		if res.Subtree {
			r, err = rt.HandleSubtree(reg.pattern, reg.op, reg.h)
		} else {
			r, err = rt.Handle(reg.pattern, reg.op, reg.h)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r.SetData(res)
		handled[reg.pattern+" "+reg.op.String()] = true
		if reg.op == resource.Subscribe {
			handled[reg.pattern+" "+resource.Unsubscribe.String()] = true
			if res.Subtree {
				// A subtree's handler answers its subscription spelling too.
				if _, err := rt.HandleSubtree(reg.pattern, resource.Unsubscribe, reg.h); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	for _, f := range files {
		for _, r := range f.Resources {
			for _, o := range r.Operations() {
				if !handled[r.Path+" "+o.Op.String()] {
					errs = append(errs, fmt.Errorf("%s %s is defined in api/%s but has no handler", strings.ToUpper(o.Op.String()), r.Path, f.Name))
				}
			}
		}
	}
	errs = append(errs, d.regErr...)
	if len(errs) > 0 {
		return fmt.Errorf("device resources: %w", errors.Join(errs...))
	}
	rt.Share() // the devices of a kind hold one table of routes
	d.router.Store(rt)
	d.regs = nil // the router holds them now
	return nil
}

// ServeModule marks a module of Config.AppModules as served: the app that
// serves it has registered its handlers, and the next Commit routes its
// resources and requires a handler for each of their operations. It fails
// for a module that is not one of Config.AppModules, or is served already.
func (d *Core) ServeModule(module string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.unserved[strings.ToLower(module)] {
		return fmt.Errorf("module %s is no module of the device that an app serves, or is served already", module)
	}
	delete(d.unserved, strings.ToLower(module))
	return nil
}

func (d *Core) enabled(f *api.File) bool {
	return f.Module == "" || d.prof.Modules.Enabled(f.Module)
}

// Routes returns the device's routes, for listing its resources.
func (d *Core) Routes() []*resource.Route { return d.router.Load().Routes() }

// Resource returns the definition of the resource that serves route r.
func Resource(r *resource.Route) *api.Resource {
	res, _ := r.Data().(*api.Resource)
	return res
}

// Do executes a request and returns its envelope. A request that names a
// subscription needs req.Client. Do fails only with ErrOff, when the device is
// in FullPowerOff and does not answer at all.
func (d *Core) Do(req *resource.Request) (resource.Envelope, error) {
	start := d.clock.Now()
	env := resource.Envelope{Op: req.Op}
	switch Mode(d.mode.Load()) {
	case ModeFullPowerOff:
		return env, ErrOff
	case ModeFwUpdate:
		return env, ErrUpdateMode
	}
	busy := d.busy.Load()
	if busy && !modePut(req) {
		return d.refuseBusy(env, req), nil
	}
	rt := d.router.Load()
	m, err := rt.Resolve(req.Op, req.Path)
	if err != nil {
		var e *resource.Error
		errors.As(err, &e)
		env.Status, env.Error = e.Status, e.Msg
		env.URI = d.rawURI(req.Path)
		if m.Route != nil {
			env.URI = m.URI(d.prefix, nil)
			if m.Child() {
				env.URI += "/" + resource.SubscriptionSegment
			}
		}
		env.QueryTime = d.clock.Now() - start
		return env, nil
	}
	req.Match = m
	op := m.Route.Data().(*api.Resource).Ops[m.Op]
	if op == nil && m.Op == resource.Unsubscribe {
		op = m.Route.Data().(*api.Resource).Ops[resource.Subscribe]
	}
	if e := op.Bind(req); e != nil {
		env.Status, env.Error = e.Status, e.Msg
		env.URI = m.URI(d.prefix, nil)
		if m.Child() {
			env.URI += "/" + resource.SubscriptionSegment
		}
		env.QueryTime = d.clock.Now() - start
		return env, nil
	}
	if busy && !(len(req.Args) > 0 && req.Args[0].Uint() == uint64(ModeApplication)) {
		return d.refuseBusy(env, req), nil // the reset alone is handled below the request pool
	}
	npath := m.Route.NumParams()
	req.URI = m.URI(d.prefix, req.Args[:npath])
	resp := m.Handler.Serve(req)
	env.Status, env.Content, env.Error = resp.Status, resp.Content, resp.Err
	env.URI = req.URI
	if m.Child() {
		env.URI += "/" + resource.SubscriptionSegment
	}
	if !resp.Status.OK() {
		env.Content = nil
		if env.Error == "" {
			env.Error = strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(resp.Status.String(), "HTTP_CODE_"), "_", " "))
		}
	}
	env.QueryTime = d.clock.Now() - start
	return env, nil
}

// Call is Do for a request given by its parts, without a client.
func (d *Core) Call(op resource.Op, path string, params ...resource.Value) (resource.Envelope, error) {
	return d.Do(&resource.Request{Op: op, Path: path, Params: params})
}

func (d *Core) rawURI(path string) string {
	p := strings.TrimPrefix(path, "/")
	if len(p) > resource.MaxPathLen {
		p = p[:resource.MaxPathLen]
	}
	return d.prefix + "/" + strings.ToValidUTF8(p, "\uFFFD")
}

// modePut reports whether req is a PUT of /System/Mode, the one request
// an exhausted request pool lets through to see whether it is a reset.
func modePut(req *resource.Request) bool {
	return req.Op == resource.Put && strings.EqualFold(strings.Trim(req.Path, "/"), "system/mode")
}

// refuseBusy answers a request while the request pool is exhausted.
func (d *Core) refuseBusy(env resource.Envelope, req *resource.Request) resource.Envelope {
	env.URI = d.rawURI(req.Path)
	env.Status = resource.StatusTooManyRequests
	env.Error = "the device's request pool is exhausted: every request is answered 429 until the device resets (PUT /System/Mode 5) or is power cycled"
	return env
}

// SetBusy exhausts the request pool (on) or refills it: while it is
// exhausted every request is answered 429, except PUT /System/Mode 5, the
// reset, which refills it.
func (d *Core) SetBusy(on bool) { d.busy.Store(on) }

// Busy reports whether the request pool is exhausted.
func (d *Core) Busy() bool { return d.busy.Load() }

// RequestTimedOut counts a request whose answer could not reach its
// client (a link lost while it was under way): it keeps a slot of the
// request pool until the next reset. When the profile's RequestPool
// slots are taken, the pool is exhausted (SetBusy) and EventBusy follows.
func (d *Core) RequestTimedOut() {
	n := d.timedOut.Add(1)
	if pool := d.prof.RequestPool; pool > 0 && n == int64(pool) && !d.busy.Swap(true) {
		d.Logf(LevelWarning, "the request pool is exhausted: %d requests timed out", n)
		d.emit(EventBusy)
	}
}

// NewClient returns a client of this device whose notifications go to sink.
func (d *Core) NewClient(name string, sink resource.Sink) *resource.Client {
	return resource.NewClient(name, sink)
}

// Providers returns the device's providers.
func (d *Core) Providers() []Provider { return slices.Clone(d.providers) }

// TopicOf returns the subscription topic of the resource at path (with its
// path parameters in the path or in params), or nil while it has no
// subscribers. Apps use it to notify the subscribers of their own resources.
func (d *Core) TopicOf(path string, params ...resource.Value) (*resource.Topic, error) {
	uri, err := d.ResourceURI(resource.Subscribe, path, params...)
	if err != nil {
		return nil, err
	}
	return d.hub.Topic(uri), nil
}

// ResourceURI returns the canonical URI of the resource that op on path
// names, binding its path parameters (from the path or from params).
func (d *Core) ResourceURI(op resource.Op, path string, params ...resource.Value) (string, error) {
	m, err := d.router.Load().Resolve(op, path)
	if err != nil {
		return "", err
	}
	req := &resource.Request{Op: op, Path: path, Params: params, Match: m}
	res := m.Route.Data().(*api.Resource)
	o := res.Ops[m.Op]
	if o == nil {
		o = res.Ops[resource.Subscribe]
	}
	if e := o.Bind(req); e != nil {
		return "", e
	}
	return m.URI(d.prefix, req.Args[:m.Route.NumParams()]), nil
}
