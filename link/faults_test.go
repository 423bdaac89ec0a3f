package link_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"senseboard"
	"senseboard/clock"
	"senseboard/fault"
	"senseboard/link"
	"senseboard/profile"
	"senseboard/provider/ble"
	"senseboard/resource"
	"senseboard/transport/serial"
	"senseboard/wire"
)

// onPipe makes a device of profile p (nil for the default) on clock clk,
// whose radio link a central reaches over an in-memory pipe: open opens a
// stream to it as central c.
func onPipe(t *testing.T, p *profile.Profile, clk clock.Clock) (d *senseboard.Device, open func(c *link.Central) *link.Conn) {
	t.Helper()
	d, err := senseboard.New(senseboard.Config{Profile: p, Clock: clk, Seed: 1, StateDir: filepath.Join(t.TempDir(), "state")})
	if err != nil {
		t.Fatal(err)
	}
	per := &link.Peripheral{Server: &serial.Server{Device: d.Core}, Radio: d.Radio}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		d.Close()
	})
	return d, func(c *link.Central) *link.Conn {
		t.Helper()
		dev, cen := net.Pipe()
		wg.Go(func() { per.ServeConn(ctx, dev) })
		l, err := c.Open(ctx, "device", cen, link.Handlers{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
}

// TestDropAsASupervisionTimeout drops a connection of the radio link on a
// virtual clock: the central hears nothing, and its requests get no
// answer (each keeps a slot of the device's request pool: with a pool of
// one the device is busy after it), until the supervision timeout has
// passed; then it learns of the disconnection, the device's
// /Comm/Ble/Peers notifies DISCONNECTED, and the device advertises again
// after the fault's delay.
func TestDropAsASupervisionTimeout(t *testing.T) {
	vclk := clock.NewVirtual()
	p := profile.Default()
	p.RequestPool = 1
	d, open := onPipe(t, p, vclk)
	ctx := context.Background()
	c := open(phoneCentral)
	if _, err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	peers := resource.NewQueue(16) // a client of the device's own, as over its serial line
	observer := resource.NewClient("serial", peers)
	defer observer.Close()
	if env, err := d.Do(&resource.Request{Op: resource.Subscribe, Path: "/Comm/Ble/Peers", Client: observer}); err != nil || !env.Status.OK() {
		t.Fatalf("subscribe to the peers: %+v, %v", env, err)
	}

	rec, err := d.Faults.InjectJSON([]byte(`{"fault": "drop", "delay": "3s"}`))
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = c.Do(rctx, resource.Get, "/Info")
	rcancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a request over the lost link: %v, want no answer", err)
	}
	if c.Err() != nil {
		t.Fatalf("the central learnt of the drop before the supervision timeout: %v", c.Err())
	}
	vclk.Advance(4 * time.Second) // DefaultConnParams' supervision timeout
	select {
	case <-c.Done():
	case <-time.After(time.Minute): // a guard against hanging, not a bound
		t.Fatal("no disconnection after the supervision timeout")
	}
	if !errors.Is(c.Err(), link.ErrDisconnected) || !strings.Contains(c.Err().Error(), "supervision timeout") {
		t.Errorf("the central's end of the connection: %v", c.Err())
	}
	ev := peers.Drain(nil)
	if len(ev) != 1 || ev[0].Content.(*ble.PeerChange).State != ble.Disconnected {
		t.Errorf("/Comm/Ble/Peers notified %+v, want DISCONNECTED", ev)
	}
	if env, _ := d.Call(resource.Get, "/Info"); env.Status != 429 {
		t.Errorf("after a request timed out with a pool of one: %d, want 429", env.Status)
	}
	if d.Radio.IsAdvertising() {
		t.Error("the device advertises before the drop's delay")
	}
	vclk.Advance(3 * time.Second)
	if !d.Radio.IsAdvertising() {
		t.Error("the device does not advertise after the drop's delay")
	}
	list := d.Faults.List()
	if list[rec.ID-1].EndedBy != fault.EndedAdvertising || len(list) != 2 || list[1].Fault.Kind != fault.Busy || list[1].Origin != fault.FromDevice {
		t.Errorf("ground truth %+v", list)
	}
	again := open(phoneCentral)
	if m, err := again.Scan(ctx); err != nil || !m.Advertising {
		t.Errorf("scan after the drop: %+v, %v", m, err)
	}
}

// TestDropKeepsASlotForRequestsOnly: over a lost link, a request, or a
// GATT write that carries one (GSP), times out at the central and keeps a
// slot of the device's request pool (a pool of one is then exhausted);
// other frames (serial data, the heart rate's notifications) take none.
func TestDropKeepsASlotForRequestsOnly(t *testing.T) {
	for _, tt := range []struct {
		name string
		kind wire.Kind
		want resource.Status // of a GET /Info after the frame is dropped
	}{
		{"request", wire.Request, 429},
		{"GATT write", link.GATTWrite, 429},
		{"NUS write", link.NUSWrite, 200},
		{"HRS notifications", link.HRSNotify, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := profile.Default()
			p.RequestPool = 1
			d, open := onPipe(t, p, clock.NewVirtual())
			ctx := context.Background()
			c := open(phoneCentral)
			if _, err := c.Connect(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Faults.InjectJSON([]byte(`{"fault": "drop"}`)); err != nil {
				t.Fatal(err)
			}
			if err := c.Send(tt.kind, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			// A scan is answered over a lost link too, after the frame before it.
			if _, err := c.Scan(ctx); err != nil {
				t.Fatal(err)
			}
			if env, _ := d.Call(resource.Get, "/Info"); env.Status != tt.want {
				t.Errorf("GET /Info after a dropped %s frame: %d, want %d", link.KindName(tt.kind), env.Status, tt.want)
			}
		})
	}
}
