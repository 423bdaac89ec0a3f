// Package clienttest connects tests to devices with package client, whose
// requests then wait as long as the tests' hang guards (await.Guard)
// rather than the client's 5 s, which a loaded machine can reach: a device
// that does not answer fails the test after a minute, and a slow machine
// does not.
package clienttest

import (
	"context"
	"io"

	"senseboard/client"
	"senseboard/internal/await"
)

// Options returns a copy of opts, or new options when it is nil, whose
// Timeout is await.Guard where opts leaves it zero.
func Options(opts *client.Options) *client.Options {
	var o client.Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout == 0 {
		o.Timeout = await.Guard
	}
	return &o
}

// Dial is client.Dial with Options(opts).
func Dial(ctx context.Context, port string, opts *client.Options) (*client.Conn, error) {
	return client.Dial(ctx, port, Options(opts))
}

// Open is client.Open with Options(opts).
func Open(ctx context.Context, name string, rw io.ReadWriteCloser, opts *client.Options) (*client.Conn, error) {
	return client.Open(ctx, name, rw, Options(opts))
}
