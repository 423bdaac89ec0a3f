package senseboard_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"senseboard"
	"senseboard/client"
	"senseboard/resource"
)

func ExampleNew() {
	dir, _ := os.MkdirTemp("", "senseboard")
	defer os.RemoveAll(dir)
	d, err := senseboard.New(senseboard.Config{StateDir: dir, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	env, _ := d.Call(resource.Get, "/info")
	fmt.Println(env.Status, env.URI)
	// Output: HTTP_CODE_OK /net/000123/Info
}

func ExampleNewFleet() {
	dir, _ := os.MkdirTemp("", "senseboard")
	defer os.RemoveAll(dir)
	// Three devices of one Config, numbered up from the profile's serial,
	// each with a TCP port that the system picks, on a virtual clock that
	// Run drives ten times faster than real time.
	f, err := senseboard.NewFleet(senseboard.Config{StateDir: dir, Seed: 1},
		senseboard.FleetOptions{Devices: 3, Speed: 10, PTY: "none", Listen: "127.0.0.1:0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	for _, m := range f.Members {
		c, err := client.Dial(ctx, "TCP"+m.TCP, nil)
		if err != nil {
			fmt.Println(err)
			continue
		}
		env, err := c.Do(ctx, resource.Get, "/Info")
		c.Close()
		fmt.Println(m.Device.Serial(), filepath.Base(m.StateDir), env.Response, err)
	}
	cancel()
	fmt.Println(<-done)
	// Output:
	// 000123 000123 200 <nil>
	// 000124 000124 200 <nil>
	// 000125 000125 200 <nil>
	// <nil>
}
