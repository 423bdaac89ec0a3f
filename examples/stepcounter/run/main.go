// Command run starts a device with the step counter app and serves it on
// TCP (--listen, 127.0.0.1:7809 by default; 127.0.0.1:0 lets the system
// pick a port), so that wbcmd can reach the app's resources:
//
//	go run ./examples/stepcounter/run &
//	wbcmd --port TCP127.0.0.1:7809 --path /Sample/StepCounter/Steps
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"

	"senseboard"
	"senseboard/app"
	"senseboard/examples/stepcounter"
	"senseboard/transport/serial"
	"senseboard/world"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "stepcounter:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:7809", "TCP address to serve on; 127.0.0.1:0 picks a free port")
	flag.Parse()
	dir, err := os.MkdirTemp("", "stepcounter")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sc, err := world.ParseScenario([]byte("segments:\n  - rest: 20s\n  - walk: 10m\n"))
	if err != nil {
		return err
	}
	d, err := senseboard.New(senseboard.Config{StateDir: dir, Scenario: sc})
	if err != nil {
		return err
	}
	defer d.Close()
	rt, err := app.Run(d.Device, stepcounter.New())
	if err != nil {
		return err
	}
	defer rt.Stop()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("%w (another device there? give --listen 127.0.0.1:0 for a free port)", err)
	}
	addr := ln.Addr().String()
	fmt.Printf("device with the step counter on TCP%s; the wearer starts walking after 20 s\n", addr)
	fmt.Printf("  wbcmd --port TCP%s --path /Sample/StepCounter/Steps\n", addr)
	fmt.Println("Press Ctrl-C to stop.")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return (&serial.Server{Device: d.Device}).Serve(ctx, ln)
}
