package app_test

import (
	"slices"
	"testing"

	"senseboard/app"
	"senseboard/clock"
)

// SubscribeNowWaiting lets its own number of notifications wait for the
// app while it is held up, the subscription's Resource is known from the
// answer, and DroppedBefore tells, in onNotify, how many were dropped
// before the notification handled: none before those that waited, all of
// them before the next one.
func TestSubscribeNowWaiting(t *testing.T) {
	definition := []byte(`swagger: '2.0'
info: {version: '1', title: Wait, x-api-state: experimental, x-api-required: false, x-api-type: public}
paths:
  /Sample/Wait/Subscription:
    post:
      responses:
        200: {description: Subscribed.}
        x-notification: {description: A value., schema: {type: integer}}
    delete:
      responses:
        200: {description: Unsubscribed.}
`)
	const wait = 3
	d := heapCoreOn(t, clock.NewReal()) // no step: the notifications wait in a queue
	pub, err := app.Run(d, funcApp{"pub", func(ctx *app.Context) error { return ctx.Provide(definition, app.Handlers{}) }})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Stop()
	type note struct {
		v      int
		before uint32
	}
	handled := make(chan note, 16)
	subscribed := make(chan *app.Subscription, 1)
	sub, err := app.Run(d, funcApp{"sub", func(ctx *app.Context) error {
		var s *app.Subscription
		s, _ = ctx.SubscribeNowWaiting("/Sample/Wait", wait, func(c any) { handled <- note{c.(int), s.DroppedBefore()} })
		subscribed <- s
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	s := <-subscribed
	if s == nil || s.Resource() == nil {
		t.Fatalf("subscription %v: no Resource from the answer", s)
	}
	gate, started := make(chan struct{}), make(chan struct{})
	sub.Context().Run(func() { close(started); <-gate })
	<-started // the app is held up
	for i := range wait + 2 {
		pub.Context().Notify("/Sample/Wait", i)
	}
	close(gate)
	var got []note
	for range wait {
		got = append(got, <-handled)
	}
	pub.Context().Notify("/Sample/Wait", wait+2)
	got = append(got, <-handled)
	want := []note{{0, 0}, {1, 0}, {2, 0}, {wait + 2, 2}}
	if !slices.Equal(got, want) || s.Resource().Dropped() != 2 {
		t.Errorf("handled (value, dropped before) %v, %d dropped; want %v and 2", got, s.Resource().Dropped(), want)
	}
}
