package air

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"
)

// TestHandledListenerHoldsNoQueue: a device whose streams go to Handle
// holds no queue for Accept; one without Handle queues a stream dialed
// before its Accept, and Accept takes it.
func TestHandledListenerHoldsNoQueue(t *testing.T) {
	l, _ := rawLink(t, Options{})
	var wg sync.WaitGroup
	defer wg.Wait()                                                       // after waiting.Close, which ends its Accept
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang guard
	defer cancel()
	handled, err := l.Listen("000321")
	if err != nil {
		t.Fatal(err)
	}
	defer handled.Close()
	handled.Handle(func(c net.Conn) { c.Close() })
	c, err := l.Dial(ctx, "000321")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	handled.mu.Lock()
	queue := handled.queue
	handled.mu.Unlock()
	if queue != nil {
		t.Errorf("a handled device holds a queue of %d for Accept", cap(queue))
	}

	waiting, err := l.Listen("000322")
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	c, err = l.Dial(ctx, "000322")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	accepted := make(chan net.Conn, 1)
	wg.Go(func() {
		s, _ := waiting.Accept()
		accepted <- s
	})
	select {
	case s := <-accepted:
		if s == nil {
			t.Fatal("Accept gave nothing")
		}
		s.Close()
	case <-ctx.Done():
		t.Fatal("Accept did not take the stream dialed before it")
	}
}
