// Command run starts a device with the step counter app, serial number
// 000400, and serves it on TCP (--listen, 127.0.0.1:7809 by default;
// 127.0.0.1:0 lets the system pick a port) and on the radio link between
// programs (--nats, as senseboard run's), so that wbcmd reaches the app's
// resources and a running senseboard's dashboard shows them:
//
//	go run ./examples/stepcounter/run &
//	wbcmd --port TCP127.0.0.1:7809 --path /Sample/StepCounter/Steps
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"senseboard"
	"senseboard/air"
	"senseboard/app"
	"senseboard/examples/stepcounter"
	"senseboard/profile"
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
	serial := flag.String("serial", "000400", "the device's serial number")
	nats := os.Getenv("SENSEBOARD_NATS")
	if nats == "" {
		nats = "local"
	}
	flag.StringVar(&nats, "nats", nats, "the radio link between programs, as senseboard run's --nats; $SENSEBOARD_NATS, when set, is the default")
	flag.Parse()
	dir, err := os.MkdirTemp("", "stepcounter")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sc, err := world.ParseScenario([]byte("segments:\n  - rest: 2s\n  - walk: 10m\n"))
	if err != nil {
		return err
	}
	var link *air.Link
	if nats != "none" {
		if link, err = air.Open(nats, air.Options{}); err != nil {
			return err
		}
		defer link.Close()
	}
	h, err := senseboard.NewFleet(senseboard.Config{Profile: profile.Default().WithSerial(*serial), StateDir: dir, Scenario: sc},
		senseboard.FleetOptions{PTY: "none", Listen: *listen, Air: link})
	if err != nil {
		return fmt.Errorf("%w (another device there? give --listen 127.0.0.1:0 for a free port, --serial for another serial number)", err)
	}
	d := h.Members[0]
	rt, err := app.Run(d.Device.Core, stepcounter.New())
	if err != nil {
		h.Close()
		return err
	}
	defer rt.Stop()
	fmt.Printf("device %s with the step counter on TCP%s; the wearer starts walking after 2 s\n", *serial, d.TCP)
	fmt.Printf("  wbcmd --port TCP%s --path /Sample/StepCounter/Steps\n", d.TCP)
	if d.Air != "" {
		fmt.Printf("  on the radio link (NATS %s): a running senseboard's dashboard shows it, with the app's resources\n", link.URL())
	}
	fmt.Println("Press Ctrl-C to stop.")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return h.Run(ctx)
}
