package logbook

import (
	"testing"

	"senseboard/resource"
)

// A refused subscription of a log's start says the device's status, and
// its reason when it gave one, as the load words a refusal, with no space
// left where a reason would be.
func TestSubscribeRefusal(t *testing.T) {
	for _, tt := range []struct {
		env  resource.Envelope
		want string
	}{
		{resource.Envelope{Status: resource.StatusNotImplemented, Error: "SampleRate 7 is not supported"}, "subscribe /Meas/Acc/7: status 501: SampleRate 7 is not supported"},
		{resource.Envelope{Status: resource.StatusNotImplemented}, "subscribe /Meas/Acc/7: status 501"},
	} {
		if got := subscribeRefusal("/Meas/Acc/7", tt.env); got != tt.want {
			t.Errorf("%q; want %q", got, tt.want)
		}
	}
}
