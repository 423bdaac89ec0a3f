// Package app is the in-device application interface: a Go API for programs
// that run inside a device, as firmware apps do on the hardware.
//
// An App is started on the device with Run. Everything the app is told runs
// on the app's own goroutine, one callback at a time, so app code needs no
// locks: the results of its asynchronous calls (Get, Put, Post, Delete,
// Subscribe), its notifications, its timers, and the requests for the
// resources it provides. That goroutine runs while the app has something
// to do, so an idle app holds none: the callbacks of one burst of work and
// of the next may run on different goroutines, never at once. Calls are
// carried out in the order they are made.
// Context methods are meant to be called from the app's goroutine, that is
// from Start and from the callbacks.
//
// An app may provide its own resources, defined by its own Swagger 2.0 YAML in
// the form of the device's definitions (api package) and validated the same
// way; every calling path reaches them. A module of the device that runs as
// an app (the data logger, package logbook) serves resources of the
// device's own definitions instead (Serve). Like firmware, an app restarts
// with every device reset and stops while the device is off; a Stopper is
// told when it stops. A handler that answers from other resources calls
// them at once (CallNow, SubscribeNow). On a virtual clock
// an app keeps in step with device time (clock.Virtual.Hold): the clock
// waits for what the app was handed before it moves on, so a callback sees
// the time of its event; a callback must therefore never wait for device
// time to pass.
package app

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"senseboard/api"
	"senseboard/clock"
	"senseboard/device"
	"senseboard/resource"
)

// An App is a program that runs inside a device.
type App interface {
	// Name names the app in messages.
	Name() string
	// Start runs on the app's goroutine when the app starts: when Run is
	// called and after every reset. An error stops the app until the next reset.
	Start(ctx *Context) error
}

// A Stopper is an App that is told when it stops: at every reset, when the
// device turns off or goes into update mode, and when its runtime stops for
// good. Stop runs on the app's goroutine, after the notifications that
// were waiting for it and before its context ends, as the firmware tells
// its modules; the runtime waits at most HandlerTimeout for it.
type Stopper interface {
	Stop(ctx *Context)
}

// Handlers serve an app's own resources, keyed by operation and pattern as
// the definition spells it, for example "GET /Sample/JumpCount". A key
// "SUBSCRIBE /X" decides on subscribers of X; without it every subscriber is
// accepted. Handlers run on the app's goroutine.
type Handlers map[string]func(req *resource.Request) resource.Response

// HandlerTimeout is how long a request for an app's resource waits for the
// app to answer before it fails with 503.
const HandlerTimeout = 5 * time.Second

// NotificationQueue is how many notifications wait for an app at most; a
// slow app loses the newest beyond that, as resource.Queue describes.
const NotificationQueue = 4096

// MaxDefinition bounds the size of the definition an app provides, so
// that a central can fetch it over the radio link in one frame.
const MaxDefinition = 32 << 10

// Runtime runs one app on one device.
type Runtime struct {
	d   *device.Core
	app App

	// life is held by each lifecycle event while it stops the app and,
	// at a reset, opens its next context, so that events that cross (an
	// update mode on one goroutine, a reset on another) take turns and at
	// most one context lives.
	life sync.Mutex

	mu       sync.Mutex
	ctx      *Context // the running context, nil while stopped
	provided map[string]bool
	handlers map[string]func(*resource.Request) resource.Response
	stopped  bool
	stopping chan struct{} // closed when the last stop has ended; nil before the first
	cancel   func()
}

// Run starts app on d and keeps it running across resets until Stop.
func Run(d *device.Core, a App) (*Runtime, error) {
	r := &Runtime{d: d, app: a, provided: map[string]bool{}}
	if err := r.start(); err != nil {
		r.stop()
		return nil, err
	}
	r.cancel = d.OnLifecycle(r.lifecycle)
	return r, nil
}

func (r *Runtime) lifecycle(e device.Event) {
	switch e {
	case device.EventReset, device.EventPowerOff, device.EventUpdateMode:
		r.life.Lock()
		// The device takes a mode under its lock and tells of it after,
		// so that events that cross may come in the other order: the mode
		// it is in tells which came last. One that ended in Application
		// mode started the app on its own event, or will.
		application := r.d.Mode() == device.ModeApplication
		if e != device.EventReset && application {
			r.life.Unlock()
			return
		}
		r.stop()
		if !application {
			r.life.Unlock()
			return
		}
		ctx, err := r.open()
		var started *starting
		if err == nil {
			started = r.launch(ctx) // before a later event can stop ctx
		}
		r.life.Unlock()
		if err != nil {
			return // Stop overtook the reset
		}
		// The reset waits for Start outside life: a later event that
		// stops ctx waits at most for the app's Stop, never for a Start
		// that hangs.
		if err := r.await(ctx, started); err != nil && !errors.Is(err, errStopped) {
			r.d.Logf(device.LevelError, "app %s did not start: %v", r.app.Name(), err)
			r.stopIfRunning(ctx)
		}
	case device.EventClose:
		r.life.Lock()
		r.stop()
		r.life.Unlock()
	}
}

// Stop stops the app for good.
func (r *Runtime) Stop() {
	if r.cancel != nil {
		r.cancel()
	}
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	r.stop()
}

// Context returns the running app's context, or nil while it is stopped.
func (r *Runtime) Context() *Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ctx
}

// start opens a new context for the app and runs its Start there.
func (r *Runtime) start() error {
	ctx, err := r.open()
	if err != nil {
		return err
	}
	return r.startOn(ctx)
}

// open makes a new context the running one, unless the runtime has
// stopped for good.
func (r *Runtime) open() (*Context, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil, errStopped
	}
	r.ctx = newContext(r)
	return r.ctx, nil
}

// stopIfRunning stops the app if ctx is still its running context (a
// later event may have stopped it and opened the next).
func (r *Runtime) stopIfRunning(ctx *Context) {
	r.life.Lock()
	defer r.life.Unlock()
	r.mu.Lock()
	running := r.ctx == ctx
	r.mu.Unlock()
	if running {
		r.stop()
	}
}

// startOn runs the app's Start on ctx and waits for it as await does (a
// reset's start and Stop may cross).
func (r *Runtime) startOn(ctx *Context) error { return r.await(ctx, r.launch(ctx)) }

// A starting is the app's Start posted on a context.
type starting struct {
	// claimed is taken once: by Start as it begins, or by a wait that
	// finds the context closed first, after which Start never runs
	claimed atomic.Bool
	err     chan error // Start's error
}

// launch posts the app's Start on ctx.
func (r *Runtime) launch(ctx *Context) *starting {
	s := &starting{err: make(chan error, 1)}
	ctx.post(func() {
		if s.claimed.CompareAndSwap(false, true) {
			s.err <- r.app.Start(ctx)
		}
	})
	return s
}

// await waits for the Start that launch posted on ctx, unless ctx closes
// before Start begins: Stop, or the stop of a later event, may cross the
// start. A Start that began is waited for, so that its own error is not
// lost to the stop's, but once ctx has closed at most HandlerTimeout, as
// a stop waits for the app's Stop: a Start that hangs holds no reset (on
// the clock's goroutine) past the stop of its app.
func (r *Runtime) await(ctx *Context, s *starting) error {
	var err error
	select {
	case err = <-s.err:
	case <-ctx.done:
		if s.claimed.CompareAndSwap(false, true) {
			return fmt.Errorf("app %s: %w", r.app.Name(), errStopped) // Start never runs
		}
		timer := time.NewTimer(HandlerTimeout)
		defer timer.Stop()
		select {
		case err = <-s.err:
		case <-timer.C:
			return fmt.Errorf("app %s: %w", r.app.Name(), errStopped)
		}
	}
	if err != nil {
		return fmt.Errorf("app %s: %w", r.app.Name(), err)
	}
	return nil
}

// errStopped is why an app does not start once its runtime has stopped
// for good, or its context was stopped before its Start came, or before a
// Start that hangs returned within HandlerTimeout.
var errStopped = errors.New("the app's runtime has stopped")

// stop stops the running app: its Stopper is told, and its context
// closes. A stop that finds another under way (Stop crossing a reset's)
// waits for it to end, so that whoever stops the app knows it stopped.
func (r *Runtime) stop() {
	r.mu.Lock()
	ctx := r.ctx
	r.ctx = nil
	if ctx == nil {
		underway := r.stopping
		r.mu.Unlock()
		if underway != nil {
			<-underway // at most HandlerTimeout
		}
		return
	}
	stopped := make(chan struct{})
	r.stopping = stopped
	r.mu.Unlock()
	defer close(stopped)
	if s, ok := r.app.(Stopper); ok {
		done := make(chan struct{})
		ctx.post(func() {
			ctx.deliverNotes()
			s.Stop(ctx)
			close(done)
		})
		timer := time.NewTimer(HandlerTimeout)
		select {
		case <-done:
		case <-timer.C:
			r.d.Logf(device.LevelError, "app %s did not stop within %v", r.app.Name(), HandlerTimeout)
		}
		timer.Stop()
	}
	ctx.close()
}

// provide adds the app's definitions once per runtime and (re)binds handlers.
func (r *Runtime) provide(definition []byte, hs Handlers) error {
	if len(definition) > MaxDefinition {
		return fmt.Errorf("%s: the definition is %d bytes; an app's definition is at most %d (the radio link carries it in one frame)",
			appFileName(r.app.Name()), len(definition), MaxDefinition)
	}
	f, err := api.Parse(appFileName(r.app.Name()), definition)
	if err != nil {
		return err
	}
	keys := map[string]bool{}
	for _, res := range f.Resources {
		for _, o := range res.Operations() {
			keys[strings.ToUpper(o.Op.String())+" "+res.Path] = true
		}
	}
	for k := range hs {
		if !keys[k] {
			return fmt.Errorf("handler %q has no operation in the definition", k)
		}
	}
	r.mu.Lock()
	r.bind(hs)
	first := !r.provided[f.Name]
	r.provided[f.Name] = true
	r.mu.Unlock()
	if !first {
		return nil
	}
	if err := r.d.AddDefinitions(f); err != nil {
		return err
	}
	for _, res := range f.Resources {
		for _, o := range res.Operations() {
			switch o.Op {
			case resource.Subscribe:
				r.d.HandleSource(res.Path, appSource{r, "SUBSCRIBE " + res.Path})
			case resource.Unsubscribe:
			default:
				key := strings.ToUpper(o.Op.String()) + " " + res.Path
				if hs[key] == nil {
					return fmt.Errorf("no handler for %s", key)
				}
				r.d.Handle(res.Path, o.Op, appHandler{r, key})
			}
		}
	}
	return r.d.Commit()
}

// bind makes hs the handlers of their keys; r.mu is held.
func (r *Runtime) bind(hs Handlers) {
	if r.handlers == nil {
		r.handlers = map[string]func(*resource.Request) resource.Response{}
	}
	for k, h := range hs {
		r.handlers[k] = h
	}
}

// serveModule registers the resources of a module of the device's own
// definitions once per runtime and (re)binds handlers.
func (r *Runtime) serveModule(module string, hs Handlers, sources map[string]resource.Source) error {
	var files []*api.File
	for _, f := range r.d.Definitions() {
		if strings.EqualFold(f.Module, module) {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return fmt.Errorf("module %s: the device defines no resources of it (or the profile leaves it out)", module)
	}
	keys := map[string]bool{}
	subscribable := map[string]bool{}
	for _, f := range files {
		for _, res := range f.Resources {
			for _, o := range res.Operations() {
				keys[strings.ToUpper(o.Op.String())+" "+res.Path] = true
				if o.Op == resource.Subscribe {
					subscribable[res.Path] = true
				}
			}
		}
	}
	for k := range hs {
		if !keys[k] {
			return fmt.Errorf("module %s: handler %q has no operation in its definitions", module, k)
		}
	}
	for p := range sources {
		if !subscribable[p] {
			return fmt.Errorf("module %s: source of %s, which is no subscribable resource of it", module, p)
		}
	}
	r.mu.Lock()
	r.bind(hs)
	first := !r.provided["module "+module]
	r.provided["module "+module] = true
	r.mu.Unlock()
	if !first {
		return nil
	}
	for _, f := range files {
		for _, res := range f.Resources {
			for _, o := range res.Operations() {
				switch o.Op {
				case resource.Subscribe:
					if src := sources[res.Path]; src != nil {
						r.d.HandleSource(res.Path, src)
					} else {
						r.d.HandleSource(res.Path, appSource{r, "SUBSCRIBE " + res.Path})
					}
				case resource.Unsubscribe:
				default:
					key := strings.ToUpper(o.Op.String()) + " " + res.Path
					if hs[key] == nil {
						return fmt.Errorf("module %s: no handler for %s", module, key)
					}
					r.d.Handle(res.Path, o.Op, appHandler{r, key})
				}
			}
		}
	}
	if err := r.d.ServeModule(module); err != nil {
		return err
	}
	return r.d.Commit()
}

// appFileName names an app's definition file after the app: "app-", the
// app's name in lower case with every character other than a letter, a
// digit, '_', '.' and '-' made '-', and ".yaml" (at most
// api.MaxFileName bytes, so that the radio link can name it).
func appFileName(name string) string {
	const prefix, suffix = "app-", ".yaml"
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			b[i] = '-'
		}
	}
	if room := api.MaxFileName - len(prefix) - len(suffix); len(b) > room {
		b = b[:room]
	}
	return prefix + string(b) + suffix
}

// serve runs the handler of key on the app's goroutine and waits for it.
func (r *Runtime) serve(key string, req *resource.Request) resource.Response {
	r.mu.Lock()
	ctx, h := r.ctx, r.handlers[key]
	r.mu.Unlock()
	if ctx == nil {
		return resource.Errorf(resource.StatusServiceUnavailable, "app %s is not running", r.app.Name())
	}
	if h == nil {
		return resource.OK(nil)
	}
	done := make(chan resource.Response, 1)
	ctx.post(func() { done <- h(req) })
	timer := time.NewTimer(HandlerTimeout)
	defer timer.Stop()
	select {
	case resp := <-done:
		return resp
	case <-ctx.done:
		return resource.Errorf(resource.StatusServiceUnavailable, "app %s stopped", r.app.Name())
	case <-timer.C:
		return resource.Errorf(resource.StatusServiceUnavailable, "app %s did not answer within %v", r.app.Name(), HandlerTimeout)
	}
}

type appHandler struct {
	r   *Runtime
	key string
}

func (h appHandler) Serve(req *resource.Request) resource.Response { return h.r.serve(h.key, req) }

// appSource accepts subscribers of an app's resource, asking the app when
// it has a SUBSCRIBE handler.
type appSource struct {
	r   *Runtime
	key string
}

func (s appSource) Subscribe(_ *resource.Topic, req *resource.Request) resource.Response {
	return s.r.serve(s.key, req)
}

func (s appSource) Unsubscribed(*resource.Topic) {}

// Context is an app's handle on its device while it runs.
type Context struct {
	r     *Runtime
	d     *device.Core
	notes *resource.Queue

	// The app's goroutine (loop) and the worker that carries out its
	// calls (work) run while they have something to do: an idle app
	// holds no goroutine. Each runs once at a time; a wake-up while it
	// runs makes it look again before it ends.
	evMu    sync.Mutex
	events  []func()
	looping bool // a goroutine runs loop
	evAgain bool // woken while looping
	callMu  sync.Mutex
	calls   []func()
	working bool // a goroutine runs work

	done      chan struct{}
	closeOnce sync.Once

	step *step // keeps the app in step with a virtual clock; nil with other clocks

	// owned by the app goroutine
	subs       map[*resource.Client]*Subscription
	noteBuf    []resource.Event // reused by deliverNotes
	delivering bool             // deliverNotes runs
}

func newContext(r *Runtime) *Context {
	c := &Context{
		r:     r,
		d:     r.d,
		notes: resource.NewQueue(NotificationQueue),
		done:  make(chan struct{}),
		subs:  map[*resource.Client]*Subscription{},
	}
	if h, ok := r.d.Clock().(holder); ok {
		c.step = &step{clock: h, notes: c.notes}
	}
	c.notes.WakeWith(c.wake)
	return c
}

// sink returns the sink of the app's subscriptions: the notification
// queue, through the step's count when the app keeps in step.
func (c *Context) sink() resource.Sink {
	if c.step != nil {
		return c.step
	}
	return c.notes
}

// Device returns the device the app runs on.
func (c *Context) Device() *device.Core { return c.d }

// post runs f on the app's goroutine.
func (c *Context) post(f func()) {
	c.step.hold()
	c.evMu.Lock()
	c.events = append(c.events, f)
	c.evMu.Unlock()
	c.wake()
}

// wake starts the app's goroutine, or makes the one that runs look again
// for events and notifications before it ends.
func (c *Context) wake() {
	c.evMu.Lock()
	if c.looping {
		c.evAgain = true
		c.evMu.Unlock()
		return
	}
	c.looping = true
	c.evMu.Unlock()
	go c.loop()
}

// deliverNotes hands the notifications that wait to their subscriptions;
// it runs on the app's goroutine.
func (c *Context) deliverNotes() {
	if c.delivering {
		return // TakeNotifications from an onNotify: they come in turn
	}
	c.delivering = true
	var held int
	c.noteBuf, held = c.step.drain(c.notes, c.noteBuf[:0])
	for _, e := range c.noteBuf {
		s := c.subs[e.Sub.Client]
		if s == nil {
			// the app unsubscribed: no onNotify sees it, so the queue's
			// hold ends here
			resource.Release(e.Content)
			continue
		}
		if e.Ended != 0 {
			delete(c.subs, s.client)
			continue
		}
		s.res, s.droppedBefore = e.Sub, e.Dropped
		s.onNotify(e.Content)
		if s.borrows {
			resource.Release(e.Content) // the queue's hold: the app is done with it
		}
	}
	clear(c.noteBuf)
	c.step.release(held)
	c.delivering = false
}

// loop is the app's goroutine: it runs the events and hands the
// notifications that wait, and ends when there are none. When the context
// has closed it ends the app's subscriptions instead.
func (c *Context) loop() {
	for {
		select {
		case <-c.done:
			for _, s := range c.subs {
				s.client.Close()
			}
			clear(c.subs)
			c.evMu.Lock()
			c.looping = false
			c.evMu.Unlock()
			return
		default:
		}
		c.evMu.Lock()
		evs := c.events
		c.events = nil
		c.evAgain = false
		c.evMu.Unlock()
		for _, f := range evs {
			if c.closed() {
				break // never run; the subscriptions end above
			}
			f()
			c.step.release(1)
		}
		c.deliverNotes()
		c.evMu.Lock()
		if len(c.events) == 0 && !c.evAgain && !c.closed() {
			c.looping = false
			c.evMu.Unlock()
			return
		}
		c.evMu.Unlock()
	}
}

// closed reports whether the context has closed.
func (c *Context) closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// work carries out the app's calls in order, and ends when there are
// none or the context has closed.
func (c *Context) work() {
	for {
		c.callMu.Lock()
		calls := c.calls
		c.calls = nil
		if len(calls) == 0 || c.closed() {
			c.working = false
			c.callMu.Unlock()
			return
		}
		c.callMu.Unlock()
		for _, f := range calls {
			f()
			c.step.release(1)
		}
	}
}

func (c *Context) enqueue(f func()) {
	c.step.hold()
	c.callMu.Lock()
	c.calls = append(c.calls, f)
	if c.working {
		c.callMu.Unlock()
		return
	}
	c.working = true
	c.callMu.Unlock()
	go c.work()
}

func (c *Context) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		c.notes.Close()
		c.step.end()
		c.wake() // the app's goroutine ends its subscriptions
	})
}

// call carries out one request on the worker and passes its envelope to
// done on the app's goroutine.
func (c *Context) call(req *resource.Request, done func(resource.Envelope)) {
	c.enqueue(func() {
		env, err := c.d.Do(req)
		if err != nil {
			env = resource.Envelope{Op: req.Op, Status: resource.StatusServiceUnavailable, Error: err.Error()}
		}
		c.post(func() {
			if done != nil {
				done(env)
			}
		})
	})
}

// Get requests the resource at path; done receives the envelope. params are
// path parameter values for {Name} placeholders, then the operation's
// parameters, in the order of the definition.
func (c *Context) Get(path string, done func(resource.Envelope), params ...resource.Value) {
	c.call(&resource.Request{Op: resource.Get, Path: path, Params: params}, done)
}

// Put overwrites the resource at path with params.
func (c *Context) Put(path string, done func(resource.Envelope), params ...resource.Value) {
	c.call(&resource.Request{Op: resource.Put, Path: path, Params: params}, done)
}

// Post sends a new record or triggers an action.
func (c *Context) Post(path string, done func(resource.Envelope), params ...resource.Value) {
	c.call(&resource.Request{Op: resource.Post, Path: path, Params: params}, done)
}

// Delete removes data or disables a feature.
func (c *Context) Delete(path string, done func(resource.Envelope), params ...resource.Value) {
	c.call(&resource.Request{Op: resource.Delete, Path: path, Params: params}, done)
}

// Subscription is one of an app's subscriptions.
type Subscription struct {
	c        *Context
	client   *resource.Client
	path     string
	params   []resource.Value
	onNotify func(content any)
	borrows  bool                   // onNotify keeps no content: it goes back after (Borrow)
	res      *resource.Subscription // the device's, from the first notification
	// droppedBefore is res's Dropped, modulo 2³², when the notification
	// being handled was queued
	droppedBefore uint32
}

// Borrow says that onNotify is done with the content it is given when it
// returns: it keeps neither the content nor anything in it (the sample
// arrays of a *content.MotionData, say) for later. The content may then go
// back to its maker once onNotify returns, to be reused for a later
// notification (resource.Recyclable), which spares a streaming device an
// allocation a notification. An onNotify that keeps some content after
// all holds it first (the Recyclable's Hold) and releases it once done
// with it. Without Borrow the content is the app's to keep as long as it
// likes, and never goes back. Call Borrow on the app's goroutine right
// after Subscribe or SubscribeNow, before any notification comes.
func (s *Subscription) Borrow() { s.borrows = true }

// Resource returns the device's subscription behind s, from its first
// notification on, or from SubscribeNow's answer (nil before): its topic,
// with the topic's Limit, and its Dropped count. An app that passes
// notifications on and loses one after taking it counts the loss there
// with Lost, as every transport does.
// Call it from the app's goroutine, in onNotify for example.
func (s *Subscription) Resource() *resource.Subscription { return s.res }

// DroppedBefore returns, in onNotify, how many of the subscription's
// notifications had been dropped when the one it handles came (its
// Resource's Dropped then, modulo 2³²: the difference of two tells how many
// between them): those lost before it. Those dropped while it waited for
// the app came after it; Resource().Dropped() counts them too.
func (s *Subscription) DroppedBefore() uint32 { return s.droppedBefore }

// Subscribe subscribes to the resource at path. onNotify receives each
// notification's content, which is shared and must not be modified; the
// app may keep it, unless it said it would not (Subscription.Borrow). done
// receives the subscribe envelope. Unsubscribe with the returned handle.
func (c *Context) Subscribe(path string, onNotify func(content any), done func(resource.Envelope), params ...resource.Value) *Subscription {
	s := &Subscription{c: c, path: path, params: params, onNotify: onNotify}
	s.client = resource.NewClient(c.r.app.Name(), c.sink())
	c.subs[s.client] = s
	c.call(&resource.Request{Op: resource.Subscribe, Path: path, Params: params, Client: s.client}, func(env resource.Envelope) {
		if !env.Status.OK() {
			delete(c.subs, s.client)
		}
		if done != nil {
			done(env)
		}
	})
	return s
}

// Unsubscribe ends the subscription; done, which may be nil, receives the envelope.
func (s *Subscription) Unsubscribe(done func(resource.Envelope)) {
	c := s.c
	delete(c.subs, s.client)
	c.call(&resource.Request{Op: resource.Unsubscribe, Path: s.path, Params: s.params, Client: s.client}, func(env resource.Envelope) {
		s.client.Close()
		if done != nil {
			done(env)
		}
	})
}

// Provide makes the app's own resources reachable from every calling path.
// definition is Swagger 2.0 YAML in the form of the device's definitions,
// at most MaxDefinition bytes; handlers serve its operations. Requests are bound and validated against the
// definition before a handler sees them.
func (c *Context) Provide(definition []byte, handlers Handlers) error {
	return c.r.provide(definition, handlers)
}

// Serve makes the app serve the resources of a module of the device's own
// definitions (the files whose x-module is module, which the device leaves
// to an app: device.Config.AppModules), as the firmware's modules serve
// theirs: from every calling path, bound and validated against their
// definitions before a handler sees them. handlers serve the operations,
// keyed as for Provide. sources, keyed by pattern, decide on the
// subscribers of the subscribable resources that give each subscriber a
// stream of its own (their methods run on the goroutine of the request or
// of the device's clock, not the app's); the others take every subscriber,
// and the app notifies them with Notify. Call it from Start: the first
// time registers the resources, later starts bind the handlers anew.
func (c *Context) Serve(module string, handlers Handlers, sources map[string]resource.Source) error {
	return c.r.serveModule(module, handlers, sources)
}

// CallNow makes a request at once, on the calling goroutine, and returns
// its envelope: for a handler of the app's resources that answers from the
// result, where Get and its like would answer too late. Unlike them it
// goes ahead of the calls still queued. The app's own resources that have
// handlers cannot be called so: their handlers wait for this goroutine.
func (c *Context) CallNow(op resource.Op, path string, params ...resource.Value) resource.Envelope {
	env, err := c.d.Do(&resource.Request{Op: op, Path: path, Params: params})
	if err != nil {
		env = resource.Envelope{Op: op, Status: resource.StatusServiceUnavailable, Error: err.Error()}
	}
	return env
}

// TakeNotifications hands the notifications that wait for the app to
// their onNotify now. A handler, or a function given to Run, runs before
// the notifications that came while the app was busy; one that ends
// subscriptions (the data logger's stop) calls it first, so that what came
// before the request is not let go with them. Call it from the app's
// goroutine; from an onNotify it does nothing.
func (c *Context) TakeNotifications() { c.deliverNotes() }

// SubscribeNow subscribes at once, as CallNow calls, and returns the
// subscription and the device's answer; the subscription is nil when the
// answer is not a success. Its notifications come to onNotify as those of
// Subscribe do.
func (c *Context) SubscribeNow(path string, onNotify func(content any), params ...resource.Value) (*Subscription, resource.Envelope) {
	return c.SubscribeNowWaiting(path, 0, onNotify, params...)
}

// SubscribeNowWaiting is SubscribeNow for an app that keeps up with the
// stream in the device's own time and falls behind only when its host
// does (a descheduled goroutine, a slow disk): up to wait of the stream's
// notifications may wait for it, in place of the topic's Limit, which is
// the room of a transport's way (resource.Client.SetWait); wait <= 0 keeps
// the Limit. The app's queue (NotificationQueue) still bounds them all.
// The subscription's Resource is known from the answer on.
func (c *Context) SubscribeNowWaiting(path string, wait int, onNotify func(content any), params ...resource.Value) (*Subscription, resource.Envelope) {
	s := &Subscription{c: c, path: path, params: params, onNotify: onNotify}
	s.client = resource.NewClient(c.r.app.Name(), c.sink())
	s.client.SetWait(wait)
	c.subs[s.client] = s
	env, err := c.d.Do(&resource.Request{Op: resource.Subscribe, Path: path, Params: params, Client: s.client})
	if err != nil {
		env = resource.Envelope{Op: resource.Subscribe, Status: resource.StatusServiceUnavailable, Error: err.Error()}
	}
	if !env.Status.OK() {
		delete(c.subs, s.client)
		s.client.Close()
		return nil, env
	}
	if subs := s.client.Subscriptions(); len(subs) == 1 {
		s.res = subs[0]
	}
	return s, env
}

// Notify sends content to the subscribers of the app's resource at path and
// returns how many took it.
func (c *Context) Notify(path string, content any, params ...resource.Value) (int, error) {
	t, err := c.d.TopicOf(path, params...)
	if err != nil || t == nil {
		return 0, err
	}
	return t.Publish(content), nil
}

// Run runs f on the app's goroutine. Unlike the other methods it may be
// called from any goroutine: it is how a driver outside the app (a write to
// a radio characteristic) hands work to the app, as an interrupt handler
// does on the hardware. f does not run once the app has stopped.
func (c *Context) Run(f func()) { c.post(f) }

// After runs f on the app's goroutine once d of device time has passed.
func (c *Context) After(d time.Duration, f func()) clock.Timer {
	return c.d.Clock().AfterFunc(d, func() {
		select {
		case <-c.done:
		default:
			c.post(f)
		}
	})
}

// Logf produces a user debug message at level.
func (c *Context) Logf(level device.Level, format string, args ...any) {
	c.d.Log(device.GroupUser, level, fmt.Sprintf(format, args...))
}
