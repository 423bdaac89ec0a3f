package host_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"senseboard/air"
	"senseboard/air/airtest"
	"senseboard/client"
	"senseboard/host"
	"senseboard/link"
	"senseboard/resource"
)

func TestHost(t *testing.T) {
	dir := t.TempDir()
	carrier := airLink(t, airtest.FreeLocal(t))
	h, err := host.New(host.Config{StateDir: dir, Devices: 2, PTY: "none", Listen: "127.0.0.1:0", Air: carrier, Speed: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Devices) != 2 || h.Devices[1].Device.Serial() != "000124" || h.Devices[1].StateDir != filepath.Join(dir, "000124") ||
		h.Devices[0].Air != air.DialSubject("000123") {
		t.Fatalf("devices: %+v %+v", h.Devices[0], h.Devices[1])
	}
	// --pty none: no device has a pseudo-terminal
	for _, r := range h.Devices {
		if _, err := os.Lstat(filepath.Join(r.StateDir, "tty")); r.PTY != "" || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("device %s with PTY none: pty %q, link: %v", r.Device.Serial(), r.PTY, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.Run(ctx) }()
	// over TCP, and over the radio link from within the program
	c, err := client.Dial(ctx, "TCP"+h.Devices[0].TCP, nil)
	if err != nil {
		t.Fatal(err)
	}
	if env, err := c.Do(ctx, resource.Get, "/Info"); err != nil || env.Response != 200 {
		t.Errorf("GET over TCP: %+v %v", env, err)
	}
	c.Close()
	nc, err := h.Devices[1].DialRadio(ctx)
	if err != nil {
		t.Fatal(err)
	}
	radio, err := (&link.Central{}).Open(ctx, "radio", nc, link.Handlers{})
	if err != nil {
		t.Fatal(err)
	}
	if adv, err := radio.Scan(ctx); err != nil || adv.Serial != "000124" || !adv.Advertising {
		t.Errorf("scan: %+v %v", adv, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return")
	}
	// the host stopped: the radio stream closed with it
	<-radio.Done()
	radio.Close()
	if _, err := h.Devices[0].DialRadio(context.Background()); err == nil {
		t.Error("DialRadio after the host stopped")
	}
}

func TestNewFails(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		cfg  host.Config
		want string
	}{
		{host.Config{Serial: "ABC", Devices: 2}, "several devices need a numeric first serial"},
		{host.Config{Speed: -1}, "speed -1: a positive factor, or max"},
		{host.Config{Listen: "nowhere"}, `listen address "nowhere"`},
	}
	for _, tt := range tests {
		tt.cfg.StateDir, tt.cfg.PTY = dir, "none"
		if tt.cfg.Listen == "" {
			tt.cfg.Listen = "none"
		}
		if _, err := host.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v", tt.cfg, err)
		}
	}
	// what a failed New opened is closed: the state directory is free again
	h, err := host.New(host.Config{StateDir: dir, PTY: "none", Listen: "none"})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
}

// TestFleetPort: with a fleet port and no ports of their own, the devices
// are reached on one port by serial number, and the program's file
// descriptors do not grow with its devices (one lock file, one listener).
func TestFleetPort(t *testing.T) {
	const devices = 20
	fds := func() int {
		e, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("no /proc/self/fd: %v", err)
		}
		return len(e)
	}
	before := fds()
	h, err := host.New(host.Config{StateDir: t.TempDir(), Devices: devices, PTY: "none", Listen: "none", ListenFleet: "127.0.0.1:0", Speed: 10})
	if err != nil {
		t.Fatal(err)
	}
	if n := fds() - before; n > devices/4 {
		t.Errorf("%d devices on a fleet port hold %d file descriptors", devices, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.Run(ctx) }()
	t.Cleanup(func() { // after a Fatal too
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	for _, r := range []*host.Running{h.Devices[7], h.Devices[0], h.Devices[devices-1]} {
		if r.TCP != "" {
			t.Errorf("device %s has a port of its own: %s", r.Device.Serial(), r.TCP)
		}
		c, err := client.Dial(ctx, "TCP"+h.Fleet+"/"+r.Device.Serial(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Welcome().Serial; got != r.Device.Serial() {
			t.Errorf("asked the fleet port for %s, welcomed by %s", r.Device.Serial(), got)
		}
		c.Close()
	}
}
