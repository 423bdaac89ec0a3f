package app_test

import (
	"sync/atomic"
	"testing"

	"senseboard/app"
	"senseboard/clock"
)

// pooled is notification content that counts its holds, as a pooled
// notification does (resource.Recyclable).
type pooled struct {
	holds atomic.Int32
	kept  atomic.Bool
}

func (p *pooled) Hold()    { p.holds.Add(1) }
func (p *pooled) Release() { p.holds.Add(-1) }
func (p *pooled) Keep()    { p.kept.Store(true) }

// A subscription whose onNotify borrows the content (Borrow) releases it
// once onNotify returns, so that it can go back to its maker; one that
// may keep it releases nothing. On the real clock, where the app's
// notifications wait in a queue that holds them.
func TestBorrowReleases(t *testing.T) {
	definition := []byte(`swagger: '2.0'
info: {version: '1', title: Pool, x-api-state: experimental, x-api-required: false, x-api-type: public}
paths:
  /Sample/Pool/Subscription:
    post:
      responses:
        200: {description: Subscribed.}
        x-notification: {description: A value., schema: {type: integer}}
    delete:
      responses:
        200: {description: Unsubscribed.}
`)
	for _, borrow := range []bool{true, false} {
		d := heapCoreOn(t, clock.NewReal()) // no step: the notifications wait in a queue
		pub, err := app.Run(d, funcApp{"pub", func(ctx *app.Context) error { return ctx.Provide(definition, app.Handlers{}) }})
		if err != nil {
			t.Fatal(err)
		}
		subscribed := make(chan bool, 1)
		handled := make(chan int32, 1)
		sub, err := app.Run(d, funcApp{"sub", func(ctx *app.Context) error {
			s, env := ctx.SubscribeNow("/Sample/Pool", func(c any) { handled <- c.(*pooled).holds.Load() })
			if s != nil && borrow {
				s.Borrow()
			}
			subscribed <- env.Status.OK()
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !<-subscribed {
			t.Fatal("the app's subscription failed")
		}
		// The app's goroutine waits until the maker has let go, so that
		// onNotify sees the queue's hold alone.
		gate := make(chan struct{})
		sub.Context().Run(func() { <-gate })
		c := &pooled{}
		c.Hold() // its maker's
		if n, err := pub.Context().Notify("/Sample/Pool", c); n != 1 || err != nil {
			t.Fatalf("notify: %d took it, %v", n, err)
		}
		c.Release()
		close(gate)
		if during := <-handled; during != 1 {
			t.Errorf("borrow %v: %d holds while onNotify runs; want the queue's one", borrow, during)
		}
		after := make(chan int32)
		sub.Context().Run(func() { after <- c.holds.Load() }) // after the notification was handled
		want := int32(1)
		if borrow {
			want = 0
		}
		if got := <-after; got != want || c.kept.Load() {
			t.Errorf("borrow %v: %d holds after onNotify returned, kept %v; want %d, not kept", borrow, got, c.kept.Load(), want)
		}
		sub.Stop()
		pub.Stop()
	}
}
