package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"

	"senseboard"
	"senseboard/client"
	"senseboard/resource"
	"senseboard/transport/serial"
)

// Connect to a device over TCP, read a resource, and take two notifications
// of the accelerometer before unsubscribing. A device is started in the
// example itself; against `senseboard run`, dial "TCP127.0.0.1:7809" or the
// path of its pseudo-terminal.
func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	d, _ := senseboard.New(senseboard.Config{StateDir: dir})
	defer d.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { (&serial.Server{Device: d.Core}).Serve(ctx, ln); close(done) }()
	defer func() { cancel(); <-done }()

	c, err := client.Dial(ctx, "TCP"+ln.Addr().String(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	env, err := c.Do(ctx, resource.Get, "/Meas/Acc/Config")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(env.Response, env.URI, string(env.Content))

	sub, env, err := c.Subscribe(ctx, "/Meas/Acc/104")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(env.Response, env.URI)
	for range 2 {
		n := <-sub.C()
		var acc struct{ ArrayAcc []struct{ X, Y, Z float32 } }
		json.Unmarshal(n.Payload, &acc)
		fmt.Println(len(acc.ArrayAcc), "samples")
	}
	env, err = sub.Unsubscribe(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(env.Response)
	// Output:
	// 200 /net/000123/Meas/Acc/Config {"GRange":8}
	// 200 /net/000123/Meas/Acc/104
	// 8 samples
	// 8 samples
	// 200
}
