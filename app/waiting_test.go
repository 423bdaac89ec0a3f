package app_test

import (
	"fmt"
	"slices"
	"testing"

	"senseboard/app"
	"senseboard/clock"
	"senseboard/device"
	"senseboard/internal/await"
)

// runPublisher runs an app that provides the resource at path (under
// /Sample), whose notifications are integers, for another app to
// subscribe to; it stops with the test.
func runPublisher(t *testing.T, d *device.Core, path string) *app.Runtime {
	t.Helper()
	definition := []byte(`swagger: '2.0'
info: {version: '1', title: Sample, x-api-state: experimental, x-api-required: false, x-api-type: public}
paths:
  ` + path + `/Subscription:
    post:
      responses:
        200: {description: Subscribed.}
        x-notification: {description: A value., schema: {type: integer}}
    delete:
      responses:
        200: {description: Unsubscribed.}
`)
	pub, err := app.Run(d, funcApp{"pub", func(ctx *app.Context) error { return ctx.Provide(definition, app.Handlers{}) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Stop)
	return pub
}

// SubscribeNowWaiting lets its own number of notifications wait for the
// app while it is held up, the subscription's Resource is known from the
// answer, and DroppedBefore tells, in onNotify, how many were dropped
// before the notification handled: none before those that waited, all of
// them before the next one.
func TestSubscribeNowWaiting(t *testing.T) {
	const wait = 3
	clk := clock.NewReal()
	t.Cleanup(clk.Close)
	d := heapCoreOn(t, clk) // no step: the notifications wait in a queue
	pub := runPublisher(t, d, "/Sample/Values")
	type note struct {
		v      int
		before uint32
	}
	handled := make(chan note, 16)
	subscribed := make(chan *app.Subscription, 1)
	sub, err := app.Run(d, funcApp{"sub", func(ctx *app.Context) error {
		var s *app.Subscription
		s, _ = ctx.SubscribeNowWaiting("/Sample/Values", wait, func(c any) { handled <- note{c.(int), s.DroppedBefore()} })
		subscribed <- s
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	s := await.Within(t, subscribed, "the app has not subscribed")
	if s == nil || s.Resource() == nil {
		t.Fatalf("subscription %v: no Resource from the answer", s)
	}
	gate, started := make(chan struct{}), make(chan struct{})
	sub.Context().Run(func() { close(started); <-gate })
	await.Within(t, started, "the app has not run the function") // the app is held up
	for i := range wait + 2 {
		pub.Context().Notify("/Sample/Values", i)
	}
	close(gate)
	var got []note
	for i := range wait {
		got = append(got, await.Within(t, handled, fmt.Sprintf("notification %d has not been handled", i)))
	}
	pub.Context().Notify("/Sample/Values", wait+2)
	got = append(got, await.Within(t, handled, "the notification after the app's wait has not been handled"))
	want := []note{{0, 0}, {1, 0}, {2, 0}, {wait + 2, 2}}
	if !slices.Equal(got, want) || s.Resource().Dropped() != 2 {
		t.Errorf("handled (value, dropped before) %v, %d dropped; want %v and 2", got, s.Resource().Dropped(), want)
	}
}

// TakeNotifications, in a function the app runs, hands it the
// notifications that came while it was busy before the function goes on;
// from an onNotify it does nothing, and one that comes meanwhile is
// handled in turn, after those before it.
func TestTakeNotifications(t *testing.T) {
	clk := clock.NewReal()
	t.Cleanup(clk.Close)
	d := heapCoreOn(t, clk) // no step: the notifications wait in a queue
	pub := runPublisher(t, d, "/Sample/Values")
	var got []int // the app's goroutine's
	subscribed := make(chan bool, 1)
	sub, err := app.Run(d, funcApp{"sub", func(ctx *app.Context) error {
		s, _ := ctx.SubscribeNow("/Sample/Values", func(c any) {
			got = append(got, c.(int))
			if c.(int) == 0 {
				pub.Context().Notify("/Sample/Values", 3) // one more, while the app handles those that waited
			}
			ctx.TakeNotifications()
		})
		subscribed <- s != nil
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	if !await.Within(t, subscribed, "the app has not subscribed") {
		t.Fatal("the app's subscription failed")
	}
	gate, started, seen := make(chan struct{}), make(chan struct{}), make(chan []int, 1)
	sub.Context().Run(func() {
		close(started)
		<-gate
		sub.Context().TakeNotifications()
		seen <- slices.Clone(got)
	})
	await.Within(t, started, "the app has not run the function")
	for i := range 3 {
		pub.Context().Notify("/Sample/Values", i)
	}
	close(gate)
	if s := await.Within(t, seen, "the function has not gone on"); !slices.Equal(s, []int{0, 1, 2}) {
		t.Errorf("the function saw %v handled before it went on, want [0 1 2]", s)
	}
	sub.Context().Run(func() { seen <- slices.Clone(got) })
	if s := await.Within(t, seen, "the app has not run the function"); !slices.Equal(s, []int{0, 1, 2, 3}) {
		t.Errorf("handled %v, want [0 1 2 3]", s)
	}
}
