package clienttest_test

import (
	"testing"
	"time"

	"senseboard/client"
	"senseboard/internal/await"
	"senseboard/internal/clienttest"
)

func TestOptions(t *testing.T) {
	tests := []struct {
		name string
		opts *client.Options
		want client.Options
	}{
		{"nil", nil, client.Options{Timeout: await.Guard}},
		{"no timeout", &client.Options{Name: "x", Push: true}, client.Options{Timeout: await.Guard, Name: "x", Push: true}},
		{"a timeout of its own", &client.Options{Timeout: 20 * time.Millisecond}, client.Options{Timeout: 20 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before client.Options
			if tt.opts != nil {
				before = *tt.opts
			}
			got := clienttest.Options(tt.opts)
			if got.Timeout != tt.want.Timeout || got.Name != tt.want.Name || got.Push != tt.want.Push {
				t.Errorf("Options gave %+v, want %+v", *got, tt.want)
			}
			if tt.opts != nil && (tt.opts.Timeout != before.Timeout || got == tt.opts) {
				t.Errorf("Options changed the options it was given")
			}
		})
	}
}
