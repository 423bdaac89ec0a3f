package bridgeclient_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"senseboard"
	"senseboard/bridge"
	"senseboard/bridge/bridgeclient"
	"senseboard/phone"
)

// startBridge runs one device and a bridge for it in this program, as
// senseboard run does, and returns the bridge's address.
func startBridge(ctx context.Context) (string, func()) {
	dir, _ := os.MkdirTemp("", "example")
	h, err := senseboard.NewFleet(senseboard.Config{StateDir: dir}, senseboard.FleetOptions{PTY: "none", Listen: "none"})
	if err != nil {
		panic(err)
	}
	r := h.Members[0]
	b, err := phone.New(phone.Config{Local: []phone.Peripheral{{Serial: r.Device.Serial(), Dial: r.DialRadio, Inject: r.Device.InjectJSON}}})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{}, 3)
	go func() { h.Run(ctx); done <- struct{}{} }()
	go func() { b.Run(ctx); done <- struct{}{} }()
	go func() { (&bridge.Server{Phone: b}).Serve(ctx, ln); done <- struct{}{} }()
	return "http://" + ln.Addr().String(), func() {
		cancel()
		<-done
		<-done
		<-done
		os.RemoveAll(dir)
	}
}

func Example() {
	ctx := context.Background()
	addr, stop := startBridge(ctx)
	defer stop()

	c, err := bridgeclient.Dial(ctx, addr, nil)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	// wait until the bridge finds the device; the first message connects to it
	for {
		if d, err := c.Device(ctx, "000123"); err == nil && d.Advertising {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	devices, err := c.Devices(ctx)
	if err != nil {
		panic(err)
	}
	for _, d := range devices {
		fmt.Println(d.Serial, d.Name)
	}

	r, err := c.Get(ctx, "/Info")
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Response, r.URI)

	sub, r, err := c.Subscribe(ctx, "/Meas/Acc/52")
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Response, r.URI)
	n := <-sub.C()
	fmt.Println(n.URI, len(n.Content) > 0, sub.Dropped(), "dropped")
	sub.Unsubscribe(ctx)

	// the wearer taps the device twice
	if err := c.Inject(ctx, "000123", map[string]any{"doubleTap": true}); err != nil {
		panic(err)
	}
	// Output:
	// 000123 Senseboard 000123
	// 200 /net/000123/Info
	// 200 /net/000123/Meas/Acc/52
	// /net/000123/Meas/Acc/52 true 0 dropped
}
