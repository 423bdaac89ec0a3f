package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"senseboard/bridge/bridgeclient"
	"senseboard/internal/await"
	"senseboard/internal/clienttest"
	"senseboard/internal/loopback"
	"senseboard/resource"
)

// syncBuffer is a buffer a process writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startProgram runs senseboard with args until the test ends.
func startProgram(t *testing.T, bin string, args ...string) *syncBuffer {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("senseboard %s: %v\n%s", args[0], err, out.String())
			}
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			<-done
			t.Errorf("senseboard %s did not stop on SIGTERM\n%s", args[0], out.String())
		}
	})
	return out
}

// waitDevice waits until the bridge is connected to a device.
func waitDevice(t *testing.T, c *bridgeclient.Client, serial string, ok func(bridgeclient.DeviceState) bool) bridgeclient.DeviceState {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		d, err := c.Device(context.Background(), serial)
		if err == nil && ok(d) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("device %s: %+v %v", serial, d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func connected(d bridgeclient.DeviceState) bool { return d.Connected }

// TestBridgeEndToEnd runs senseboard run and uses the device through its
// phone bridge, as a client on another computer would.
func TestBridgeEndToEnd(t *testing.T) {
	t.Parallel()
	bin := buildSenseboard(t)
	dir := t.TempDir()
	httpAddr := loopback.FreeAddr(t)
	nats := "local:" + loopback.FreePort(t) // this test's own NATS server, which the first program starts
	tcp := loopback.FreeAddr(t)
	out := startProgram(t, bin, "run", "--state", filepath.Join(dir, "state"), "--listen", tcp, "--pty", "none",
		"--nats", nats, "--http", httpAddr)
	base := "http://" + httpAddr
	ctx := context.Background()
	var c *bridgeclient.Client
	deadline := time.Now().Add(time.Minute)
	for {
		var err error
		if c, err = bridgeclient.Dial(ctx, base, nil); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bridge did not come up: %v\n%s", err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer c.Close()
	// the bridge connects when a client first uses the device
	if d := waitDevice(t, c, "000123", func(d bridgeclient.DeviceState) bool { return d.Advertising }); d.Connected {
		t.Errorf("connected before any client used the device: %+v", d)
	}
	// over the serial path, the untouched device advertises and has no
	// peers, and advertising stops and starts again as on a real one
	serialPath, err := clienttest.Dial(ctx, "TCP"+tcp, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		op       resource.Op
		path     string
		status   int
		contains string
	}{
		{resource.Get, "/Comm/Ble/Peers", 200, `"ConnectedPeers":[]`},
		{resource.Get, "/Comm/Ble/Adv", 200, `"isAdvertising":true`},
		{resource.Delete, "/Comm/Ble/Adv", 200, ""},
		{resource.Post, "/Comm/Ble/Adv", 200, ""},
		{resource.Get, "/Comm/Ble/Adv", 200, `"isAdvertising":true`},
	} {
		env, err := serialPath.Do(ctx, tt.op, tt.path)
		if err != nil || env.Response != tt.status || !strings.Contains(string(env.Raw), tt.contains) {
			t.Errorf("%s %s over the serial path of a device no phone touched: %s, %v", tt.op, tt.path, env.Raw, err)
		}
	}
	serialPath.Close()
	if !strings.Contains(out.String(), "bridge       "+base+"/ (dashboard") || !strings.Contains(out.String(), "a phone with central address ") ||
		!strings.Contains(out.String(), "radio link   NATS nats://127.0.0.1:"+strings.TrimPrefix(nats, "local:")+" (its server runs in this program") {
		t.Errorf("run does not say where the bridge is and which phone it is:\n%s", out)
	}

	// GET /Info and PUT time
	r, err := c.Get(ctx, "/Info")
	if err != nil || r.Response != 200 || r.URI != "/net/000123/Info" || !strings.Contains(string(r.Content), `"serial":"000123"`) {
		t.Fatalf("GET /Info: %+v %v", r, err)
	}
	if r, err := c.Put(ctx, "/Time", int64(1700000000000000)); err != nil || r.Response != 200 {
		t.Fatalf("PUT /Time: %+v %v", r, err)
	}
	if r, _ := c.Get(ctx, "/Time"); !strings.HasPrefix(string(r.Content), "17000000") {
		t.Errorf("time after PUT: %s", r.Content)
	}

	// three parallel subscriptions on one WebSocket; unsubscribe one
	subs := map[string]*bridgeclient.Subscription{}
	for _, p := range []string{"/Meas/Acc/104", "/Meas/ECG/250", "/Meas/HR"} {
		s, r, err := c.Subscribe(ctx, p)
		if err != nil || !r.OK() { // HR says 204 until it knows a beat
			t.Fatalf("subscribe %s: %+v %v", p, r, err)
		}
		subs[p] = s
	}
	for p, s := range subs {
		select {
		case n := <-s.C():
			if n.URI != "/net/000123"+p {
				t.Errorf("notification of %s: %+v", p, n)
			}
		case <-time.After(time.Minute):
			t.Fatalf("no notification of %s", p)
		}
	}
	if _, err := subs["/Meas/ECG/250"].Unsubscribe(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/Meas/Acc/104", "/Meas/HR"} {
		select {
		case <-subs[p].C():
		case <-time.After(time.Minute):
			t.Fatalf("%s stopped after ECG was unsubscribed", p)
		}
	}

	// the OUTPUT stream, as curl sees it
	octx, cancel := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(octx, http.MethodGet, base+"/api/output?path=/Meas/Temp&path=/Meas/Acc/13&id=temp", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for i := 0; i < 4 && sc.Scan(); i++ {
		line := sc.Text()
		if !strings.HasPrefix(line, "ID:temp /net/000123/Meas/Temp OUTPUT: {") && !strings.HasPrefix(line, "ID:/Meas/Acc/13 /net/000123/Meas/Acc/13 OUTPUT: {") {
			t.Errorf("OUTPUT line %q", line)
		}
	}
	cancel()
	resp.Body.Close()

	// a device of another program, which joins the first one's NATS server
	out2 := startProgram(t, bin, "run", "--state", filepath.Join(dir, "state2"), "--serial", "000124", "--listen", "none", "--pty", "none",
		"--nats", nats, "--http", "none")
	waitDevice(t, c, "000124", func(d bridgeclient.DeviceState) bool { return d.Advertising })
	if strings.Contains(out2.String(), "its server runs in this program") {
		t.Errorf("the second program started a NATS server of its own:\n%s", out2)
	}
	r, err = c.Send(ctx, bridgeclient.Message{Type: "get", Path: "/net/000124/Info"})
	if err != nil || r.Device != "000124" || !strings.Contains(string(r.Content), `"serial":"000124"`) {
		t.Fatalf("GET over the air: %+v %v", r, err)
	}
	c.Disconnect(ctx, "000124")
	waitDevice(t, c, "000124", func(d bridgeclient.DeviceState) bool { return !d.Connected })

	// the pass key flow: once the device has one, it answers only after pairing
	if r, err := c.Put(ctx, "/Comm/Ble/Security/Pin", "246810"); err != nil || r.Response != 200 {
		t.Fatalf("PUT pin: %+v %v", r, err)
	}
	if _, err := c.Get(ctx, "/Info"); err == nil || !strings.Contains(err.Error(), "pair with its pass key first") {
		t.Errorf("GET before pairing: %v", err)
	}
	if _, err := c.Pair(ctx, "000123", "111111", false); err == nil || !strings.Contains(err.Error(), "the pass key does not match") {
		t.Errorf("pair with a wrong key: %v", err)
	}
	if d, err := c.Pair(ctx, "000123", "246810", true); err != nil || !d.Encrypted || !d.Bonded {
		t.Fatalf("pair: %+v %v", d, err)
	}
	// bonding policy BondingOnce: a second bond is refused
	policy := json.RawMessage(`{"Policy": 2}`)
	if r, err := c.Send(ctx, bridgeclient.Message{Type: "put", Path: "/Comm/Ble/Security/Settings", Value: policy}); err != nil || r.Response != 200 {
		t.Fatalf("PUT bonding settings: %+v %v", r, err)
	}
	if _, err := c.Pair(ctx, "000123", "246810", true); err == nil || !strings.Contains(err.Error(), "pairing refused by bonding policy BondingOnce") {
		t.Errorf("second bond: %v", err)
	}

	// DELETE Peers while subscribed: the subscriptions end, the bridge says
	// why and stays disconnected
	d := waitDevice(t, c, "000123", connected)
	if r, err := c.Send(ctx, bridgeclient.Message{Type: "delete", Path: "/Comm/Ble/Peers/" + strconv.Itoa(int(d.Handle))}); err != nil || r.Response != 200 {
		t.Fatalf("DELETE Peers: %+v %v", r, err)
	}
	await.Drained(t, subs["/Meas/Acc/104"].C(), "the subscription has not ended after DELETE Peers")
	if err := subs["/Meas/Acc/104"].Err(); err == nil || !strings.Contains(err.Error(), "DELETE /Comm/Ble/Peers") {
		t.Errorf("subscription after DELETE Peers: %v", err)
	}
	d = waitDevice(t, c, "000123", func(d bridgeclient.DeviceState) bool { return !d.Connected })
	if d.AutoConnect || !strings.Contains(d.Note, "the device dropped the connection") {
		t.Errorf("device after DELETE Peers: %+v", d)
	}
	// reconnecting when asked encrypts with the bond's keys
	if d, err := c.Connect(ctx, "000123"); err != nil || !d.Encrypted {
		t.Fatalf("connect again: %+v %v", d, err)
	}
	if r, err := c.Get(ctx, "/Info"); err != nil || r.Response != 200 {
		t.Errorf("GET after reconnecting: %+v %v", r, err)
	}
}

// TestBridgeAddress refuses to serve beyond loopback without a token.
func TestBridgeAddress(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"bridge", "--http", "0.0.0.0:0", "--nats", "none", "--state", t.TempDir()}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "an access token is needed to listen beyond loopback (give --token or set SENSEBOARD_TOKEN)") {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
}
