package inbox_test

import (
	"errors"
	"testing"

	"senseboard/internal/inbox"
)

func TestInbox(t *testing.T) {
	b := inbox.New[int](2)
	for i := range 5 {
		b.Deliver(i)
	}
	if b.Dropped() != 3 {
		t.Errorf("dropped %d, want 3", b.Dropped())
	}
	gone := errors.New("gone")
	b.Finish(gone)
	b.Finish(nil)
	b.Deliver(9)
	var got []int
	for v := range b.C() {
		got = append(got, v)
	}
	if len(got) != 2 || got[0] != 0 || got[1] != 1 || b.Err() != gone {
		t.Errorf("got %v, err %v", got, b.Err())
	}
}
