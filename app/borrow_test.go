package app_test

import (
	"sync/atomic"
	"testing"

	"senseboard/app"
	"senseboard/clock"
	"senseboard/internal/await"
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
// may keep it releases nothing; content that comes after the app
// unsubscribed, which no onNotify sees, is released. On the real clock,
// where the app's notifications wait in a queue that holds them.
func TestBorrowReleases(t *testing.T) {
	for _, tc := range []struct {
		name        string
		borrow      bool
		unsubscribe bool // before the notification is handed to the app
		want        int32
	}{
		{"borrows", true, false, 0},
		{"may keep", false, false, 1},
		{"unsubscribed", false, true, 0},
	} {
		borrow := tc.borrow
		clk := clock.NewReal()
		t.Cleanup(clk.Close)
		d := heapCoreOn(t, clk) // no step: the notifications wait in a queue
		pub := runPublisher(t, d, "/Sample/Pool")
		subscribed := make(chan bool, 1)
		handled := make(chan int32, 1)
		var subscription *app.Subscription
		sub, err := app.Run(d, funcApp{"sub", func(ctx *app.Context) error {
			s, env := ctx.SubscribeNow("/Sample/Pool", func(c any) { handled <- c.(*pooled).holds.Load() })
			if s != nil && borrow {
				s.Borrow()
			}
			subscription = s
			subscribed <- env.Status.OK()
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !await.Within(t, subscribed, tc.name+": the app has not subscribed") {
			t.Fatal("the app's subscription failed")
		}
		// The app's goroutine waits until the maker has let go, so that
		// onNotify sees the queue's hold alone.
		gate, started := make(chan struct{}), make(chan struct{})
		sub.Context().Run(func() {
			close(started)
			<-gate
			if tc.unsubscribe {
				subscription.Unsubscribe(nil)
			}
		})
		await.Within(t, started, tc.name+": the app has not run the function") // the notification comes while the app's goroutine waits
		c := &pooled{}
		c.Hold() // its maker's
		if n, err := pub.Context().Notify("/Sample/Pool", c); n != 1 || err != nil {
			t.Fatalf("notify: %d took it, %v", n, err)
		}
		c.Release()
		close(gate)
		if !tc.unsubscribe {
			if during := await.Within(t, handled, tc.name+": the notification has not been handled"); during != 1 {
				t.Errorf("%s: %d holds while onNotify runs; want the queue's one", tc.name, during)
			}
		}
		after := make(chan int32)
		sub.Context().Run(func() { after <- c.holds.Load() }) // after the notification was handled
		if got := await.Within(t, after, tc.name+": the app has not run the function"); got != tc.want || c.kept.Load() {
			t.Errorf("%s: %d holds after the app had the notification, kept %v; want %d, not kept", tc.name, got, c.kept.Load(), tc.want)
		}
		if tc.unsubscribe && len(handled) != 0 {
			t.Errorf("%s: onNotify ran after the app unsubscribed", tc.name)
		}
		sub.Stop()
		pub.Stop()
	}
}
