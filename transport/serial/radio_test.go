package serial_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"senseboard"
	"senseboard/air"
	"senseboard/client"
	"senseboard/provider/ble"
	"senseboard/resource"
	"senseboard/transport/serial"
)

// onAir puts a new device on the air in a directory of the test's.
func onAir(t *testing.T) (*senseboard.Device, air.Device) {
	t.Helper()
	dir := t.TempDir()
	d, err := senseboard.New(senseboard.Config{StateDir: filepath.Join(dir, "state"), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	airDir := filepath.Join(dir, "air")
	ln, err := air.Listen(airDir, d.Serial())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := air.Listen(airDir, d.Serial()); err == nil || !strings.Contains(err.Error(), "on the air already") {
		t.Errorf("second listen: %v", err)
	}
	srv := &serial.Server{Device: d.Device}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.ServeRadios(ctx, ln, d.BLE); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		d.Close()
	})
	devs, err := air.List(airDir)
	if err != nil || len(devs) != 1 || devs[0].Serial != d.Serial() {
		t.Fatalf("air.List: %v, %v", devs, err)
	}
	return d, devs[0]
}

func openRadio(t *testing.T, dev air.Device) *client.Conn {
	t.Helper()
	ctx := context.Background()
	nc, err := air.Dial(ctx, dev)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Open(ctx, "radio", nc, &client.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRadioLink(t *testing.T) {
	d, dev := onAir(t)
	ctx := context.Background()
	phone := openRadio(t, dev)

	// before connecting, only the radio answers
	if _, err := phone.Do(ctx, resource.Get, "/Info"); err == nil || !strings.Contains(err.Error(), "not connected; scan and connect first") {
		t.Errorf("request before connecting: %v", err)
	}
	adv, err := phone.Scan(ctx)
	if err != nil || !adv.Advertising || adv.Serial != d.Serial() || adv.Address != d.BLE.Address() {
		t.Fatalf("scan: %+v, %v", adv, err)
	}
	if want := ble.DefaultScanResp("Senseboard", d.Serial()); string(adv.ScanResp) != string(want) {
		t.Errorf("scan response % x, want % x", adv.ScanResp, want)
	}
	handle, err := phone.Connect(ctx, "C0:00:00:00:00:01", "phone")
	if err != nil {
		t.Fatal(err)
	}
	env, err := phone.Do(ctx, resource.Get, "/Info")
	if err != nil || env.Response != 200 || !strings.Contains(string(env.Content), `"serial":"000123"`) {
		t.Fatalf("GET /Info over the air: %s, %v", env.Raw, err)
	}
	sub, env, err := phone.Subscribe(ctx, "/Comm/Ble/Peers")
	if err != nil || env.Response != 200 {
		t.Fatalf("subscribe: %+v, %v", env, err)
	}

	// one connection at a time; the device does not advertise meanwhile
	other := openRadio(t, dev)
	if adv, err := other.Scan(ctx); err != nil || adv.Advertising {
		t.Errorf("scan while connected: %+v, %v", adv, err)
	}
	if _, err := other.Connect(ctx, "C0:00:00:00:00:02", "tablet"); err == nil || err.Error() != "device 000123 is not advertising" {
		t.Errorf("second connection: %v", err)
	}

	// the device drops the connection: the stream says why and closes
	if _, err := d.Device.Do(&resource.Request{Op: resource.Delete, Path: "/Comm/Ble/Peers/" + strconv.Itoa(int(handle))}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-phone.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the stream stayed open after DELETE /Comm/Ble/Peers")
	}
	if err := phone.Err(); !errors.Is(err, client.ErrDisconnected) || !strings.Contains(err.Error(), "DELETE /Comm/Ble/Peers") {
		t.Errorf("stream error %v", err)
	}
	for range sub.C() {
	}
	if sub.Err() == nil {
		t.Error("subscription did not end with the connection")
	}
	if adv, err := other.Scan(ctx); err != nil || !adv.Advertising {
		t.Errorf("scan after the disconnection: %+v, %v", adv, err)
	}
}

func TestRadioPairing(t *testing.T) {
	d, dev := onAir(t)
	ctx := context.Background()
	do := func(op resource.Op, path string, params ...resource.Value) {
		t.Helper()
		env, err := d.Device.Do(&resource.Request{Op: op, Path: path, Params: params})
		if err != nil || !env.Status.OK() {
			t.Fatalf("%s %s: %+v %v", op, path, env, err)
		}
	}
	do(resource.Put, "/Comm/Ble/Security/Pin", resource.String("123456"))
	policy, _ := resource.RecordJSON("BondingSettings", []byte(`{"Policy": 2}`))
	do(resource.Put, "/Comm/Ble/Security/Settings", policy)

	phone := openRadio(t, dev)
	if _, err := phone.Connect(ctx, "C0:00:00:00:00:01", "phone"); err != nil {
		t.Fatal(err)
	}
	if _, err := phone.Do(ctx, resource.Get, "/Info"); err == nil || !strings.Contains(err.Error(), "pair with its pass key first") {
		t.Errorf("request before pairing: %v", err)
	}
	for _, pk := range []struct{ key, err string }{
		{"", "pairing failed: the device requires its 6-digit pass key"},
		{"000000", "pairing failed: the pass key does not match"},
	} {
		if _, err := phone.Pair(ctx, pk.key, true); err == nil || err.Error() != pk.err {
			t.Errorf("pair with %q: %v, want %s", pk.key, err, pk.err)
		}
	}
	key, err := phone.Pair(ctx, "123456", true)
	if err != nil || key == "" {
		t.Fatalf("pair: %q, %v", key, err)
	}
	if env, err := phone.Do(ctx, resource.Get, "/Info"); err != nil || env.Response != 200 {
		t.Fatalf("GET after pairing: %+v, %v", env, err)
	}
	if err := phone.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}

	// the bonded phone comes back and encrypts with its key
	phone = openRadio(t, dev)
	if _, err := phone.Connect(ctx, "C0:00:00:00:00:01", "phone"); err != nil {
		t.Fatal(err)
	}
	if err := phone.Encrypt(ctx, "not-the-key"); err == nil || !strings.Contains(err.Error(), "encryption failed") {
		t.Errorf("encrypt with a wrong key: %v", err)
	}
	if err := phone.Encrypt(ctx, key); err != nil {
		t.Fatal(err)
	}
	if env, err := phone.Do(ctx, resource.Get, "/Time"); err != nil || env.Response != 200 {
		t.Fatalf("GET after encrypting: %+v, %v", env, err)
	}
	phone.Disconnect(ctx)

	// another phone may not bond: the policy allows one bond
	tablet := openRadio(t, dev)
	if _, err := tablet.Connect(ctx, "C0:00:00:00:00:02", "tablet"); err != nil {
		t.Fatal(err)
	}
	if _, err := tablet.Pair(ctx, "123456", true); err == nil || err.Error() != "pairing refused by bonding policy BondingOnce" {
		t.Errorf("second bond: %v", err)
	}
	if _, err := tablet.Pair(ctx, "123456", false); err != nil {
		t.Errorf("pairing without bonding: %v", err)
	}
}

func TestRadioBadFrames(t *testing.T) {
	_, dev := onAir(t)
	ctx := context.Background()
	phone := openRadio(t, dev)
	if _, err := phone.Pair(ctx, "123456", true); err == nil || !strings.Contains(err.Error(), "pair: not connected") {
		t.Errorf("pair before connecting: %v", err)
	}
	if _, err := phone.Connect(ctx, "", "phone"); err == nil || !strings.Contains(err.Error(), "connect: want") {
		t.Errorf("connect without an address: %v", err)
	}
	if _, err := phone.Connect(ctx, "C0:00:00:00:00:01", "phone"); err != nil {
		t.Fatal(err)
	}
	if _, err := phone.Connect(ctx, "C0:00:00:00:00:01", "phone"); err == nil || !strings.Contains(err.Error(), "connected already") {
		t.Errorf("connect twice: %v", err)
	}
}
