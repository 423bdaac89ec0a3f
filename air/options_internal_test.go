package air

import (
	"log/slog"
	"testing"
	"time"
)

// Options left out, zero or negative take their defaults; those given are
// kept.
func TestOptionsDefaults(t *testing.T) {
	log := slog.Default()
	for _, tt := range []struct {
		in, want Options
	}{
		{Options{}, Options{Name: "senseboard", Interval: DefaultInterval, Missed: DefaultMissed, ReadBuffer: DefaultReadBuffer,
			PendingMessages: DefaultPendingMessages, ReconnectWait: DefaultReconnectWait}},
		{Options{Interval: -1, Missed: -1, ReadBuffer: -1, PendingMessages: -1, ReconnectWait: -1},
			Options{Name: "senseboard", Interval: DefaultInterval, Missed: DefaultMissed, ReadBuffer: DefaultReadBuffer,
				PendingMessages: DefaultPendingMessages, ReconnectWait: DefaultReconnectWait}},
		{Options{Name: "x", Interval: 1, Missed: 1, ReadBuffer: 1, PendingMessages: 1, ReconnectWait: 1, Log: log},
			Options{Name: "x", Interval: 1, Missed: 1, ReadBuffer: 1, PendingMessages: 1, ReconnectWait: 1, Log: log}},
		{Options{Interval: 2 * time.Second, ReconnectWait: time.Minute},
			Options{Name: "senseboard", Interval: 2 * time.Second, Missed: DefaultMissed, ReadBuffer: DefaultReadBuffer,
				PendingMessages: DefaultPendingMessages, ReconnectWait: time.Minute}},
	} {
		got := tt.in.withDefaults()
		if got.Log == nil {
			t.Errorf("withDefaults(%+v) has no logger", tt.in)
		}
		if tt.want.Log == nil {
			got.Log = nil
		}
		if got != tt.want {
			t.Errorf("withDefaults(%+v) =\n%+v, want\n%+v", tt.in, got, tt.want)
		}
	}
}
