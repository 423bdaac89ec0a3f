package serial

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"senseboard/api"
	"senseboard/clock"
	"senseboard/device"
	"senseboard/internal/clienttest"
	"senseboard/resource"
)

// frontEndDefinition defines /Test/Front, a stream of integers.
const frontEndDefinition = `swagger: '2.0'
info:
  version: NA
  title: Front
  x-api-state: stable
  x-api-required: false
  x-api-type: public
paths:
  /Test/Front/Subscription:
    post:
      description: Subscribe.
      responses:
        200:
          description: Subscribed.
        x-notification:
          description: A number.
          schema:
            type: integer
    delete:
      description: Unsubscribe.
      responses:
        200:
          description: Unsubscribed.
`

// frontEndProvider serves /Test/Front as a topic of which two
// notifications may wait, as the ECG's front end holds two, and hands
// the topic of each subscription to topics.
type frontEndProvider struct {
	acceptAll
	topics chan *resource.Topic
}

func (p frontEndProvider) Register(d *device.Core) error {
	d.HandleSource("/Test/Front", p)
	return nil
}

func (p frontEndProvider) Subscribe(t *resource.Topic, _ *resource.Request) resource.Response {
	t.Limit = 2
	p.topics <- t
	return resource.OK(nil)
}

// A line that ServeLine serves takes a session's notifications on the
// goroutine that wakes it, as TestPTYTakesNotificationsAtOnce shows of a
// session on a pseudo-terminal's writer: six of a topic whose Limit is 2,
// published back to back in one pass, all leave, and the client gets them.
func TestServeLineTakesNotificationsAtOnce(t *testing.T) {
	r := clock.NewReal()
	t.Cleanup(r.Close)
	f, err := api.Parse("front.yaml", []byte(frontEndDefinition))
	if err != nil {
		t.Fatal(err)
	}
	defs := &api.Set{}
	if err := defs.Add(f); err != nil {
		t.Fatal(err)
	}
	front := frontEndProvider{topics: make(chan *resource.Topic, 1)}
	dev, err := device.New(device.Config{Clock: r, Definitions: defs, Providers: []device.Provider{front}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	srv := &Server{Device: dev}
	pt, err := OpenPTY("")
	if err != nil {
		t.Fatal(err)
	}
	defer pt.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var served sync.WaitGroup
	served.Go(func() { srv.ServeLine(ctx, pt) })
	defer served.Wait()
	defer cancel()
	c, err := clienttest.Dial(ctx, pt.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub, env, err := c.Subscribe(ctx, "/Test/Front")
	if err != nil || !env.OK() {
		t.Fatalf("subscribe: %+v, %v", env, err)
	}
	topic := <-front.topics
	next := func(want int) {
		t.Helper()
		select {
		case n := <-sub.C():
			if string(n.Payload) != strconv.Itoa(want) {
				t.Fatalf("notification %s, want %d", n.Payload, want)
			}
		case <-time.After(time.Minute): // a hang guard
			t.Fatalf("notification %d taken but not delivered in a minute", want)
		}
	}
	// The goroutine that reads the line wrote the subscription's response,
	// and may hold the line's writer a while after the client read it, on
	// a busy machine: a pass of one notification, which leaves once the
	// line is free, comes before those that fill the topic.
	clock.At(r, r.Now(), func() { topic.Publish(-1) })
	next(-1)
	for pass := range 20 {
		taken := make(chan int, 1) // the pass does not wait for this goroutine
		clock.At(r, r.Now(), func() {
			n := 0
			for i := range 6 {
				n += topic.Publish(pass*6 + i)
			}
			taken <- n
		})
		if n := <-taken; n != 6 {
			t.Fatalf("pass %d: %d of 6 notifications taken", pass, n)
		}
		for i := range 6 { // before the next pass, so that the line is free
			next(pass*6 + i)
		}
	}
}
