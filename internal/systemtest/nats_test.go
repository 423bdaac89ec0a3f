package systemtest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"senseboard"
	"senseboard/air"
	"senseboard/air/airtest"
	"senseboard/bridge"
	"senseboard/bridge/bridgeclient"
	"senseboard/internal/await"
	"senseboard/link"
	"senseboard/load"
	"senseboard/phone"
	"senseboard/profile"
)

// steady keeps streams and adverts through a busy machine's pauses.
var steady = air.Options{Interval: 50 * time.Millisecond, Missed: 200, ReconnectWait: 20 * time.Millisecond}

// airLink joins (or starts) the computer's server at addr until the test ends.
func airLink(t testing.TB, addr string) *air.Link {
	t.Helper()
	return airtest.Local(t, addr, steady)
}

// withToken makes o use the token in file.
func withToken(o air.Options, file string) air.Options {
	o.TokenFile = file
	return o
}

// deviceProgram runs devices as senseboard run does, joined to link, until the
// test ends or stop is called.
func deviceProgram(t *testing.T, link *air.Link, serial string, n int) (stop func()) {
	t.Helper()
	_, stop = runFleet(t, serial, senseboard.FleetOptions{Devices: n, PTY: "none", Listen: "none", Air: link})
	return stop
}

// runFleet runs a fleet of opts from serial on, until the test ends or
// stop is called, and returns it.
func runFleet(t *testing.T, serial string, opts senseboard.FleetOptions) (h *senseboard.Fleet, stop func()) {
	t.Helper()
	h, err := senseboard.NewFleet(senseboard.Config{Profile: profile.Default().WithSerial(serial), StateDir: t.TempDir()}, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("the program of %s: %v", serial, err)
			}
		})
	}
	t.Cleanup(stop)
	return h, stop
}

// runBridge runs a bridge alone, joined to link, and a client of its HTTP API.
func runBridge(t *testing.T, link *air.Link) *bridgeclient.Client {
	t.Helper()
	return runBridgeOf(t, phone.Config{Air: link})
}

// runBridgeOf runs a bridge of cfg, scanning often, and a client of its
// HTTP API. Each exchange with a device waits a minute, a guard against
// hanging, not the phone's 5 s, which a loaded machine can reach.
func runBridgeOf(t *testing.T, cfg phone.Config) *bridgeclient.Client {
	t.Helper()
	cfg.StateDir, cfg.ScanInterval, cfg.Timeout = t.TempDir(), 20*time.Millisecond, await.Guard
	b, err := phone.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	srv := httptest.NewServer((&bridge.Server{Phone: b}).Handler())
	c, err := bridgeclient.Dial(ctx, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		srv.Close()
		cancel()
		<-done
	})
	return c
}

// until polls the bridge until a device's state satisfies ok; the deadline
// only guards a hang.
func until(t *testing.T, c *bridgeclient.Client, serial, what string, ok func(bridgeclient.DeviceState, error) bool) bridgeclient.DeviceState {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		d, err := c.Device(context.Background(), serial)
		if ok(d, err) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("device %s never %s: %+v %v", serial, what, d, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func advertising(d bridgeclient.DeviceState, err error) bool { return err == nil && d.Advertising }

// TestBridgeOfAnotherProgram: a device program and a bridge program on the
// computer's NATS server, which the first runs: the bridge sees the
// device, pairs with it, and requests and subscribes through the radio
// link; when the device's program stops, the device goes away with why.
func TestBridgeOfAnotherProgram(t *testing.T) {
	addr := airtest.FreeLocal(t)
	devLink := airLink(t, addr)
	stop := deviceProgram(t, devLink, "000300", 2)
	c := runBridge(t, airLink(t, addr))
	ctx := context.Background()

	if d := until(t, c, "000301", "advertising", advertising); d.Local || d.Name != "Senseboard 000301" {
		t.Errorf("device of another program: %+v", d)
	}
	r, err := c.Send(ctx, bridgeclient.Message{Type: "get", Path: "/net/000300/Info"})
	if err != nil || r.Response != 200 || !strings.Contains(string(r.Content), `"serial":"000300"`) {
		t.Fatalf("GET over NATS: %+v %v", r, err)
	}
	// a pass key: requests wait for pairing, which bonds
	if r, err := c.Send(ctx, bridgeclient.Message{Type: "put", Path: "/net/000300/Comm/Ble/Security/Pin", Value: []byte(`"246810"`)}); err != nil || r.Response != 200 {
		t.Fatalf("PUT pin: %+v %v", r, err)
	}
	if _, err := c.Send(ctx, bridgeclient.Message{Type: "get", Path: "/net/000300/Info"}); err == nil || !strings.Contains(err.Error(), "pair with its pass key first") {
		t.Errorf("GET before pairing: %v", err)
	}
	if d, err := c.Pair(ctx, "000300", "246810", true); err != nil || !d.Encrypted || !d.Bonded {
		t.Fatalf("pair over NATS: %+v %v", d, err)
	}
	sub, r, err := c.SubscribeMessage(ctx, bridgeclient.Message{Type: "subscribe", Path: "/net/000300/Meas/Acc/13"})
	if err != nil || !r.OK() {
		t.Fatalf("subscribe over NATS: %+v %v", r, err)
	}
	for i := range 3 {
		n, ok := await.Next(t, sub.C(), fmt.Sprintf("notification %d over NATS has not come", i))
		if !ok || n.URI != "/net/000300/Meas/Acc/13" {
			t.Fatalf("notification %+v %v", n, sub.Err())
		}
	}

	// the device's program stops: its devices say goodbye, the
	// subscription ends, and the bridge says why
	stop()
	await.Drained(t, sub.C(), "the subscription has not ended with the device's program")
	// the stream's end or the device's goodbye, whichever the bridge
	// hears first, says why
	if err := sub.Err(); err == nil || !strings.Contains(err.Error(), "000300 went") || !strings.Contains(err.Error(), "went off the air: its program stopped") {
		t.Errorf("the subscription ended with %v", err)
	}
	for _, s := range []string{"000300", "000301"} {
		until(t, c, s, "gone", func(d bridgeclient.DeviceState, err error) bool {
			return err != nil && strings.Contains(err.Error(), "it went away (it went off the air: its program stopped)")
		})
	}
	_, err = c.Device(ctx, "000300")
	t.Logf("what users see: %v; subscription: %v", err, sub.Err())
}

// TestBridgeBesideItsOwnDevices: the bridge of a program that runs
// devices on the air, as senseboard run starts it, lists those devices
// once, as its own (their adverts do not come back to it, and its
// directory leaves them out), and a device of another program from its
// adverts; the bridge of a third program hears the program's devices;
// when the second program stops, its device goes with why, and the
// program's own stay.
func TestBridgeBesideItsOwnDevices(t *testing.T) {
	addr := airtest.FreeLocal(t)
	own := airLink(t, addr)
	h, _ := runFleet(t, "000600", senseboard.FleetOptions{Devices: 2, PTY: "none", Listen: "none", Air: own})
	var local []phone.Peripheral
	for _, m := range h.Members {
		local = append(local, phone.Peripheral{Serial: m.Device.Serial(), Dial: m.DialRadio, Scan: m.Scan, Inject: m.Device.InjectJSON})
	}
	c := runBridgeOf(t, phone.Config{Local: local, Air: own})
	stop := deviceProgram(t, airLink(t, addr), "000700", 1)

	until(t, c, "000700", "advertising", advertising)
	devs, err := c.Devices(context.Background())
	var got []string
	for _, d := range devs {
		got = append(got, fmt.Sprintf("%s local=%v", d.Serial, d.Local))
	}
	if want := "000600 local=true, 000601 local=true, 000700 local=false"; err != nil || strings.Join(got, ", ") != want {
		t.Errorf("the bridge lists %s (%v); want %s", strings.Join(got, ", "), err, want)
	}
	// the bridge of another program hears the program's devices, whose
	// adverts go out on the program's adverts' connection
	other := runBridge(t, airLink(t, addr))
	for _, s := range []string{"000600", "000601"} {
		if d := until(t, other, s, "advertising", advertising); d.Local {
			t.Errorf("another program's bridge lists %s as its own", s)
		}
	}
	stop()
	until(t, c, "000700", "gone", func(d bridgeclient.DeviceState, err error) bool {
		return err != nil && strings.Contains(err.Error(), "it went away (it went off the air: its program stopped)")
	})
	for _, s := range []string{"000600", "000601"} {
		if d, err := c.Device(context.Background(), s); err != nil || !d.Local {
			t.Errorf("its own device %s after the other program stopped: %+v %v", s, d, err)
		}
	}
}

// TestBridgeTakesNoSlotUntilUsed: a bridge on the same NATS sees the
// devices of another program, their advertisements included, from their
// adverts: it holds no stream of theirs, so a central of a third program
// gets each device's one connection slot; once that central is gone, a
// client of the bridge uses a device, which takes a slot then.
func TestBridgeTakesNoSlotUntilUsed(t *testing.T) {
	addr := airtest.FreeLocal(t)
	runFleet(t, "000400", senseboard.FleetOptions{Devices: 3, PTY: "none", Listen: "none", Air: airLink(t, addr), MaxConnsPerDevice: 1})
	ctx := context.Background()
	c := runBridge(t, airLink(t, addr))
	serials := []string{"000400", "000401", "000402"}
	for _, s := range serials {
		if d := until(t, c, s, "advertising", advertising); d.Name != "Senseboard "+s || d.Connected {
			t.Errorf("device %s: %+v", s, d)
		}
	}
	central := airLink(t, addr)
	lc := &link.Central{Address: "C0:4C:4F:41:44:00", Name: "another central", Timeout: time.Minute}
	var conns []*link.Conn
	for _, s := range serials {
		dctx, dcancel := context.WithTimeout(ctx, time.Minute) // hang guard
		st, err := central.Dial(dctx, s)
		if err != nil {
			t.Fatal(err)
		}
		lk, err := lc.Open(dctx, "device "+s, st, link.Handlers{})
		if err != nil {
			dcancel()
			t.Fatalf("device %s, its one slot, with the bridge watching: %v", s, err)
		}
		if _, err := lk.Connect(dctx); err != nil {
			t.Errorf("connect to %s: %v", s, err)
		}
		dcancel()
		conns = append(conns, lk)
	}
	for _, lk := range conns {
		lk.Close()
	}
	var r *bridgeclient.Response
	var err error
	for { // the device's slot frees once its program sees the stream end
		r, err = c.Send(ctx, bridgeclient.Message{Type: "get", Path: "/net/000401/Info"})
		if err == nil || !strings.Contains(err.Error(), "too many connections") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil || r.Response != 200 {
		t.Errorf("the bridge's GET once used: %v %v", r, err)
	}
}

// cluster is two NATS servers routed to each other on loopback, as on two
// computers.
type cluster struct {
	t      *testing.T
	srv    [2]*server.Server
	client [2]int // client ports
	route  [2]int // cluster ports
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	cl := &cluster{t: t}
	for i := range 2 {
		cl.client[i] = port(t)
		cl.route[i] = port(t)
	}
	for i := range 2 {
		cl.start(i)
	}
	t.Cleanup(func() {
		for _, s := range cl.srv {
			if s != nil {
				s.Shutdown()
				s.WaitForShutdown()
			}
		}
	})
	return cl
}

func port(t *testing.T) int {
	p, _ := strconv.Atoi(strings.TrimPrefix(airtest.FreeLocal(t), "127.0.0.1:"))
	return p
}

// start starts server i, routed to the other. Servers do not tell clients
// of each other: a program reaches only the server it was given, as one on
// a computer that went away.
func (cl *cluster) start(i int) {
	cl.t.Helper()
	other := 1 - i
	routes := server.RoutesFromStr("nats://127.0.0.1:" + strconv.Itoa(cl.route[other]))
	s, err := server.NewServer(&server.Options{ServerName: "s" + strconv.Itoa(i), Host: "127.0.0.1", Port: cl.client[i], NoLog: true, NoSigs: true,
		Cluster: server.ClusterOpts{Name: "senseboard", Host: "127.0.0.1", Port: cl.route[i], NoAdvertise: true}, Routes: routes})
	if err != nil {
		cl.t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(time.Minute) {
		cl.t.Fatalf("server %d did not start", i)
	}
	cl.srv[i] = s
}

// stop stops server i.
func (cl *cluster) stop(i int) {
	cl.srv[i].Shutdown()
	cl.srv[i].WaitForShutdown()
	cl.srv[i] = nil
}

func (cl *cluster) url(i int) string { return "nats://127.0.0.1:" + strconv.Itoa(cl.client[i]) }

// routed waits until the servers route to each other.
func (cl *cluster) routed() {
	deadline := time.Now().Add(time.Minute)
	for cl.srv[0].NumRoutes() == 0 || cl.srv[1].NumRoutes() == 0 {
		if time.Now().After(deadline) {
			cl.t.Fatal("the servers do not route")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// join joins the NATS server at url until the test ends.
func join(t *testing.T, url string, o air.Options) *air.Link {
	t.Helper()
	l, err := air.Join(url, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestTwoComputers: devices joined to one server of a cluster, a bridge to
// the other; the bridge reaches the devices through the route. When the
// devices' server stops, they go away from the bridge with why; when it
// comes back, their program reconnects on its own and the bridge reaches
// them again.
func TestTwoComputers(t *testing.T) {
	cl := newCluster(t)
	cl.routed()
	o := air.Options{Interval: 50 * time.Millisecond, Missed: 10, ReconnectWait: 20 * time.Millisecond}
	devLink, bridgeLink := join(t, cl.url(0), o), join(t, cl.url(1), o)
	deviceProgram(t, devLink, "000400", 3)
	c := runBridge(t, bridgeLink)
	ctx := context.Background()
	get := func(serial string) error {
		r, err := c.Send(ctx, bridgeclient.Message{Type: "get", Path: "/net/" + serial + "/Info"})
		if err == nil && !strings.Contains(string(r.Content), `"serial":"`+serial+`"`) {
			t.Errorf("GET /Info of %s: %+v", serial, r)
		}
		return err
	}
	for _, s := range []string{"000400", "000401", "000402"} {
		until(t, c, s, "seen across the cluster", func(d bridgeclient.DeviceState, err error) bool { return err == nil && get(s) == nil })
	}

	// the devices' server stops: the devices go away, with why
	cl.stop(0)
	d := until(t, c, "000402", "gone", func(d bridgeclient.DeviceState, err error) bool { return err != nil })
	_, err := c.Device(ctx, "000400")
	if err == nil || !strings.Contains(err.Error(), "its adverts stopped") || !strings.Contains(err.Error(), "lost its NATS server") {
		t.Errorf("what users see of a device whose server stopped: %v", err)
	}
	t.Logf("what users see: %v (last state %+v)", err, d)
	if devLink.Connected() {
		t.Error("the devices' program is connected to a server that stopped")
	}

	// it comes back: the program reconnects, and the bridge reaches the devices
	cl.start(0)
	until(t, c, "000400", "back", func(d bridgeclient.DeviceState, err error) bool { return err == nil && get("000400") == nil })
	if !devLink.Connected() {
		t.Error("the devices' program did not reconnect")
	}
}

// TestServerRestart: the program that runs the computer's NATS server
// stops while a bridge of another program subscribes to a device of a
// third. The radio link cannot keep a stream over the lost connection:
// the subscription ends, and the device's note says the connection to the
// NATS server was lost. Another program takes the server over, and the
// next request connects the bridge to the device again, as a phone
// reconnects to a BLE device; the bridge hears the adverts of a device
// that comes on the air after.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	addr := airtest.FreeLocal(t)
	server, err := air.Local(addr, withToken(steady, airtest.TokenFile(t))) // the program that runs the server, closed below
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	deviceProgram(t, airLink(t, addr), "000500", 1)
	c := runBridge(t, airLink(t, addr))
	ctx := context.Background()
	until(t, c, "000500", "advertising", advertising)
	sub, r, err := c.SubscribeMessage(ctx, bridgeclient.Message{Type: "subscribe", Path: "/net/000500/Meas/Acc/13"})
	if err != nil || !r.OK() {
		t.Fatalf("subscribe: %+v %v", r, err)
	}
	if _, ok := await.Next(t, sub.C(), "no notification has come"); !ok {
		t.Fatalf("no notification: %v", sub.Err())
	}

	server.Close()
	await.Drained(t, sub.C(), "the subscription has not ended with the NATS server")
	const why = "the connection to the NATS server was lost"
	if err := sub.Err(); err == nil || !strings.Contains(err.Error(), why) {
		t.Errorf("the subscription ended with %v", err)
	}
	d := until(t, c, "000500", "disconnected", func(d bridgeclient.DeviceState, err error) bool { return err == nil && !d.Connected })
	if !strings.Contains(d.Note, why) {
		t.Errorf("the device's note: %q", d.Note)
	}
	t.Logf("what users see: subscription: %v; note: %s", sub.Err(), d.Note)
	until(t, c, "000500", "reached again", func(bridgeclient.DeviceState, error) bool {
		r, err := c.Send(ctx, bridgeclient.Message{Type: "get", Path: "/net/000500/Info"})
		return err == nil && r.Response == 200
	})
	// the bridge's adverts' connection is back too: it hears a device
	// that came on the air after the server did
	deviceProgram(t, airLink(t, addr), "000510", 1)
	until(t, c, "000510", "advertising", advertising)
}

// TestPermissionsOfTheDocs: a NATS server whose users hold the
// permissions docs/scaling.md gives a device program and a load, each
// with a fixed inbox (air.Options.ID, --nats-id): the load reaches the
// program's devices and streams from them; a client of the load's user
// cannot read the program's inbox, and a device program cannot advertise
// a device that is not its own. A bridge of the bridge's role, whose
// adverts' connection shows the same user, sees the devices.
func TestPermissionsOfTheDocs(t *testing.T) {
	devices := []string{"000600", "000601"}
	var devPub, devSub []string
	for _, s := range devices {
		devPub = append(devPub, air.AdvertSubject(s), air.DialSubject(s))
		devSub = append(devSub, air.DialSubject(s))
	}
	users := []*server.User{
		{Username: "fleet-a", Password: "secret-a", Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: append(devPub, air.InboxSubjects)},
			Subscribe: &server.SubjectPermission{Allow: append(devSub, air.ScanSubject, air.InboxSubject("fleet-a"), "_INBOX.>")},
			Response:  &server.ResponsePermission{MaxMsgs: 1, Expires: time.Minute},
		}},
		{Username: "load-1", Password: "secret-l", Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{air.ScanSubject, "senseboard.air.dial.>", air.InboxSubjects}},
			Subscribe: &server.SubjectPermission{Allow: []string{air.AdvertSubjects, air.InboxSubject("load-1"), "_INBOX.>"}},
		}},
		{Username: "bridge-1", Password: "secret-b", Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{air.ScanSubject, "senseboard.air.dial.>", air.InboxSubjects}},
			Subscribe: &server.SubjectPermission{Allow: []string{air.AdvertSubjects, air.InboxSubject("bridge-1"), "_INBOX.>"}},
		}},
	}
	p := port(t)
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: p, Users: users, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(time.Minute) {
		t.Fatal("the NATS server did not start")
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	url := func(user, password string) string { return fmt.Sprintf("nats://%s:%s@127.0.0.1:%d", user, password, p) }

	dev := steady
	dev.ID = "fleet-a"
	deviceProgram(t, join(t, url("fleet-a", "secret-a"), dev), devices[0], len(devices))
	ctx := context.Background()
	central := steady
	central.ID, central.Name = "load-1", load.Name
	r, err := load.Run(ctx, load.Config{Air: join(t, url("load-1", "secret-l"), central), Serials: devices,
		Subscribe: []string{"/Meas/IMU6/52"}, Duration: 500 * time.Millisecond, Timeout: time.Minute})
	if err != nil && !errors.Is(err, load.ErrBelowThreshold) { // how much arrives is the machine's to say
		t.Fatalf("the load: %v", err)
	}
	if r.Reached != len(devices) || r.Streams[0].Notifications == 0 {
		t.Errorf("the load reached %d of %d devices, %d notifications", r.Reached, len(devices), r.Streams[0].Notifications)
	}

	// a bridge of the bridge's role watches the air on its second
	// connection, with the same user: it hears the devices' adverts
	bridge := steady
	bridge.ID = "bridge-1"
	c := runBridge(t, join(t, url("bridge-1", "secret-b"), bridge))
	until(t, c, devices[1], "advertising", advertising)

	// refused checks that what a client of a user does is refused
	refused := func(what, user, password string, do func(*nats.Conn)) {
		t.Helper()
		denied := make(chan error, 4)
		nc, err := nats.Connect(url(user, password), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { denied <- err }))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		do(nc)
		nc.Flush()
		select {
		case err := <-denied:
			if !errors.Is(err, nats.ErrPermissionViolation) {
				t.Errorf("%s: %v", what, err)
			}
		case <-time.After(time.Minute): // hang guard
			t.Errorf("%s was not refused", what)
		}
	}
	refused("the load's user reading the device program's inbox", "load-1", "secret-l", func(nc *nats.Conn) {
		nc.Subscribe(air.InboxSubject("fleet-a"), func(*nats.Msg) { t.Error("the load's user read the device program's inbox") })
	})
	refused("the device program's user advertising a device not its own", "fleet-a", "secret-a", func(nc *nats.Conn) {
		nc.Publish(air.AdvertSubject("000999"), []byte(`{"serial":"000999","program":"fleet-a","every":1000}`))
	})
}
