package await_test

import (
	"testing"

	"senseboard/internal/await"
)

func TestWithin(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if got := await.Within(t, ch, "7 did not come"); got != 7 {
		t.Errorf("Within gave %d, want 7", got)
	}
	close(ch)
	if got := await.Within(t, ch, "the channel did not close"); got != 0 {
		t.Errorf("Within of a closed channel gave %d, want 0", got)
	}
}

func TestNext(t *testing.T) {
	ch := make(chan string, 1)
	ch <- "a"
	if v, open := await.Next(t, ch, "a did not come"); v != "a" || !open {
		t.Errorf("Next gave %q, %v; want \"a\", open", v, open)
	}
	close(ch)
	if v, open := await.Next(t, ch, "the channel did not close"); v != "" || open {
		t.Errorf("Next of a closed channel gave %q, %v; want \"\", closed", v, open)
	}
}

func TestDrained(t *testing.T) {
	ch := make(chan int, 3)
	ch <- 1
	ch <- 2
	close(ch)
	await.Drained(t, ch, "the channel did not close")
	if n := len(ch); n != 0 {
		t.Errorf("%d values left in the channel, want none", n)
	}
}
