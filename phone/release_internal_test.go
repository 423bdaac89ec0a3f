package phone

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"senseboard/internal/await"
	"senseboard/resource"
)

// A use of a device that comes while the phone lets go of its connection
// (a release: nobody used it for Idle; or a user's disconnect) waits for
// the connection to end and connects anew: it does not fail on the link
// being closed. Where the phone connects only when asked (Manual), the
// use fails at once as not connected.
func TestUseDuringARelease(t *testing.T) {
	for _, tt := range []struct {
		name   string
		manual bool
		idle   time.Duration
		letGo  func(context.Context, *Phone)
		why    string // what the error of a use in Manual mode says of the connection
	}{
		// nobody used it for Idle: the scan releases it
		{"release", false, time.Nanosecond, func(ctx context.Context, ph *Phone) { ph.Scan(ctx) }, ""},
		{"disconnect", false, time.Hour, func(ctx context.Context, ph *Phone) { ph.Disconnect(ctx, "000777") }, ""},
		{"manual release", true, time.Nanosecond, func(ctx context.Context, ph *Phone) { ph.Scan(ctx) },
			"(released: no client used the device for 1ns)"},
		{"manual disconnect", true, time.Hour, func(ctx context.Context, ph *Phone) { ph.Disconnect(ctx, "000777") },
			"(a user is disconnecting it)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dev := &scriptedDevice{script: script{answerRequests: true, disconnecting: make(chan struct{}, 1), let: make(chan struct{})}}
			ph, err := New(Config{Local: []Peripheral{{Serial: "000777", Dial: dev.dial}}, Manual: tt.manual, Idle: tt.idle, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer dev.wg.Wait()
			defer ph.Close()
			ctx := context.Background()
			ph.Scan(ctx)
			if tt.manual {
				if err := ph.Connect(ctx, "000777"); err != nil {
					t.Fatal(err)
				}
			}
			u, err := ph.Use(ctx, "000777")
			if err != nil {
				t.Fatal(err)
			}
			u.Done()

			var letGo sync.WaitGroup
			letGo.Go(func() { tt.letGo(ctx, ph) })
			await.Within(t, dev.disconnecting, "the device has not been told to disconnect")
			if tt.manual {
				// the link is closing and the device holds it open; a use
				// that took the link fails once the device lets it close
				var once sync.Once
				let := func() { once.Do(func() { close(dev.let) }) }
				err := get(ctx, ph, let)
				let()
				letGo.Wait()
				if !errors.Is(err, ErrNotConnected) || !strings.Contains(err.Error(), tt.why) {
					t.Errorf("a use while the phone let go of the device (%s): %v; want %v, saying %s", tt.name, err, ErrNotConnected, tt.why)
				}
				if n := dev.dials.Load(); n != 1 {
					t.Errorf("%d streams dialled, want 1: the ended connection's", n)
				}
				return
			}
			done := make(chan error, 1)
			go func() {
				u, err := ph.Use(ctx, "000777")
				if err != nil {
					done <- err
					return
				}
				defer u.Done()
				_, err = u.Do(ctx, resource.Get, "/Info")
				done <- err
			}()
			d, _ := ph.device("000777")
			for { // until the use has begun
				d.mu.Lock()
				n := d.inUse
				d.mu.Unlock()
				if n == 1 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			close(dev.let)
			letGo.Wait()
			if err := <-done; err != nil {
				t.Errorf("a use while the phone let go of the device (%s): %v", tt.name, err)
			}
			if n := dev.dials.Load(); n != 2 {
				t.Errorf("%d streams dialled, want 2: the ended connection's and the use's", n)
			}
		})
	}
}
