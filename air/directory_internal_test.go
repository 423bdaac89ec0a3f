package air

import (
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestDirectoryGoodbyes: a device leaves the directory when the program
// that serves it says goodbye, with why, and not when another program
// says goodbye for the same serial number.
func TestDirectoryGoodbyes(t *testing.T) {
	_, _, d := watchedLink(t, Options{Interval: time.Hour})
	advert := func(program, gone string) {
		b, _ := json.Marshal(Advert{Serial: "000555", Program: program, Every: 1000, Gone: gone})
		d.advert(&nats.Msg{Subject: AdvertSubject("000555"), Data: b})
	}
	for _, tt := range []struct {
		program, gone string
		present       bool
		why           string
	}{
		{"p1", "", true, ""},
		{"p2", "switched off", true, ""},
		{"p1", "switched off", false, "it went off the air: switched off"},
		{"p2", "switched off", false, "it went off the air: switched off"},
	} {
		advert(tt.program, tt.gone)
		d.mu.Lock()
		present, why := d.present["000555"] != nil, d.left["000555"]
		d.mu.Unlock()
		if present != tt.present || why != tt.why {
			t.Errorf("after %s's advert gone %q: present %v, why %q; want %v, %q", tt.program, tt.gone, present, why, tt.present, tt.why)
		}
	}
}

// TestDirectoryCloseUnsubscribes: a closed directory hears no more adverts.
func TestDirectoryCloseUnsubscribes(t *testing.T) {
	l, _ := rawLink(t, Options{Interval: time.Hour})
	d, err := l.Watch()
	if err != nil {
		t.Fatal(err)
	}
	nc, _ := l.advertConn(false)
	if n := nc.NumSubscriptions(); n != 1 {
		t.Fatalf("%d subscriptions of the adverts' connection with a directory, want 1", n)
	}
	d.Close()
	if n := nc.NumSubscriptions(); n != 0 {
		t.Errorf("%d subscriptions after the directory closed, want 0", n)
	}
}

// advertMsg is an advert as NATS delivers it.
func advertMsg(t testing.TB, a Advert) *nats.Msg {
	t.Helper()
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return &nats.Msg{Subject: AdvertSubject(a.Serial), Data: b}
}

// TestDirectoryAdvertAgain: an advert that repeats a device's last one
// byte for byte, as a device's adverts do every second while what a scan
// sees stays, keeps the device in the directory and allocates nothing; one
// that differs is taken.
func TestDirectoryAdvertAgain(t *testing.T) {
	_, _, d := watchedLink(t, Options{Interval: time.Hour})
	first := Advert{Serial: "000555", Program: "p1", Every: 1000, Scan: json.RawMessage(`{"advertising":true}`)}
	d.advert(advertMsg(t, first))
	d.mu.Lock()
	d.present["000555"].heard = time.Now().Add(-time.Hour) // its adverts stopped long ago
	d.mu.Unlock()
	again := advertMsg(t, first)
	d.advert(again)
	if ps := d.Peripherals(); len(ps) != 1 || string(ps[0].Scan) != string(first.Scan) {
		t.Fatalf("after the advert again: %+v, want 000555 with its scan", ps)
	}
	if n := testing.AllocsPerRun(100, func() { d.advert(again) }); n != 0 {
		t.Errorf("an advert again allocates %v times, want 0", n)
	}
	next := first
	next.Scan = json.RawMessage(`{"advertising":false}`)
	d.advert(advertMsg(t, next))
	if b, ok := d.Scan("000555"); !ok || string(b) != string(next.Scan) {
		t.Errorf("scan after a new advert: %s, %v; want %s", b, ok, next.Scan)
	}
	moved := next
	moved.Program = "p2"
	d.advert(advertMsg(t, moved))
	if ps := d.Peripherals(); len(ps) != 1 || ps[0].Program != "p2" {
		t.Errorf("after another program's advert: %+v, want 000555 of p2", ps)
	}
}

// TestDirectoryLeavesOutOwnDevices: a directory lists the devices of
// other programs, not those of its own link, whose adverts it drops
// without allocating; its own program's older adverts too.
func TestDirectoryLeavesOutOwnDevices(t *testing.T) {
	l, _, d := watchedLink(t, Options{Interval: time.Hour})
	ln := listened(t, l, "000556")
	ln.mu.Lock()
	own := &nats.Msg{Subject: AdvertSubject("000556"), Data: ln.advert}
	ln.mu.Unlock()
	d.advert(own)
	if n := testing.AllocsPerRun(100, func() { d.advert(own) }); n != 0 {
		t.Errorf("its own device's advert allocates %v times, want 0", n)
	}
	older := Advert{Serial: "000556", Program: l.id, Every: 1000, Scan: json.RawMessage(`{"advertising":false}`)}
	d.advert(advertMsg(t, older))
	d.advert(advertMsg(t, Advert{Serial: "000557", Program: "other", Every: 1000}))
	if ps := d.Peripherals(); len(ps) != 1 || ps[0].Serial != "000557" {
		t.Errorf("peripherals %+v, want 000557 alone", ps)
	}
}

// TestOwnAdvertsDoNotComeBack: a program that watches the air publishes
// its devices' adverts on a connection that NATS does not echo: its
// directory is not handed them, and is handed another program's.
func TestOwnAdvertsDoNotComeBack(t *testing.T) {
	l, nc, d := watchedLink(t, Options{Interval: time.Hour})
	listened(t, l, "000560")
	for range 10 {
		l.advertiseAll()
	}
	adv, _ := l.advertConn(false)
	if err := adv.Flush(); err != nil {
		t.Fatal(err)
	}
	nc.Publish(AdvertSubject("000561"), advertMsg(t, Advert{Serial: "000561", Program: "other", Every: 1000}).Data)
	deadline := time.Now().Add(time.Minute) // hang guard
	for len(d.Peripherals()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	pending, _, _ := d.sub.Pending()
	delivered, _ := d.sub.Delivered()
	if ps := d.Peripherals(); len(ps) != 1 || ps[0].Serial != "000561" || int64(pending)+delivered != 1 {
		t.Errorf("peripherals %+v, %d adverts handed to the directory and %d waiting; want 000561 alone, of one advert", ps, delivered, pending)
	}
}

// TestWatchWithoutServer: a directory whose adverts' connection cannot
// reach the server says so with ErrNoServer.
func TestWatchWithoutServer(t *testing.T) {
	srv := natsServer(t)
	l, err := Join(srv.ClientURL(), Options{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv.Shutdown()
	srv.WaitForShutdown()
	if _, err := l.Watch(); !errors.Is(err, ErrNoServer) {
		t.Errorf("Watch without a server: %v, want %v", err, ErrNoServer)
	} else {
		t.Logf("what users see: %v", err)
	}
}

// TestStatsCountAdverts: the link's figures count the adverts it sends
// on the adverts' connection of a program that watches the air.
func TestStatsCountAdverts(t *testing.T) {
	l, _, _ := watchedLink(t, Options{Interval: time.Hour})
	ln := listened(t, l, "000562")
	before := l.Stats()
	const n = 10
	for range n {
		ln.advertise("")
	}
	if sent := l.Stats().OutMsgs - before.OutMsgs; sent < n {
		t.Errorf("%d messages sent for %d adverts", sent, n)
	}
}

// TestDirectoryWhyWhenAdvertsConnectionLost: a device whose adverts
// stopped while the connection they come on is down leaves the directory
// because of the connection, not because its program went away.
func TestDirectoryWhyWhenAdvertsConnectionLost(t *testing.T) {
	l, _, d := watchedLink(t, Options{Interval: time.Hour, ReconnectWait: time.Hour})
	d.advert(advertMsg(t, Advert{Serial: "000563", Program: "other", Every: 1000}))
	d.mu.Lock()
	d.present["000563"].heard = time.Now().Add(-time.Hour)
	d.mu.Unlock()
	adv, _ := l.advertConn(false)
	id, err := adv.GetClientID()
	if err != nil {
		t.Fatal(err)
	}
	if err := EmbeddedServer(l).DisconnectClientByID(id); err != nil { // as a server of a cluster that is gone
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // hang guard
	for adv.IsConnected() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if ps := d.Peripherals(); len(ps) != 0 {
		t.Fatalf("peripherals %+v, want none", ps)
	}
	if why := d.Why("000563"); !strings.Contains(why, "the NATS connection of this program is down") {
		t.Errorf("why: %q", why)
	}
}

// TestWatchConnectsWithoutTheLink: while the first directory's adverts'
// connection is being made, the link goes on: what takes its lock does
// not wait for the server to answer.
func TestWatchConnectsWithoutTheLink(t *testing.T) {
	srv := natsServer(t)
	dialing, release := make(chan struct{}), make(chan struct{})
	var dials atomic.Int32
	o := Options{Interval: time.Hour, hooks: &testHooks{wrapConn: func(c net.Conn) net.Conn {
		if dials.Add(1) == 2 { // the adverts' connection
			close(dialing)
			<-release
		}
		return c
	}}}
	l, err := Join(srv.ClientURL(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	unblock := sync.OnceFunc(func() { close(release) })
	defer unblock()
	watched := make(chan error, 1)
	wg.Go(func() {
		d, err := l.Watch()
		if err == nil {
			d.Close()
		}
		watched <- err
	})
	guard := time.After(time.Minute) // hang guard
	select {
	case <-dialing:
	case <-guard:
		t.Fatal("the adverts' connection was not dialed")
	}
	open := make(chan bool, 1)
	wg.Go(func() { open <- !l.isClosed() })
	select {
	case <-open:
	case <-guard:
		t.Error("the link's lock is held while its adverts' connection is made")
	}
	unblock()
	select {
	case err := <-watched:
		if err != nil {
			t.Error(err)
		}
	case <-guard:
		t.Fatal("Watch did not return")
	}
}

// watchedLink is rawLink with a directory of the air, closed with the
// test before the link.
func watchedLink(t *testing.T, o Options) (*Link, *nats.Conn, *Directory) {
	t.Helper()
	l, nc := rawLink(t, o)
	d, err := l.Watch()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return l, nc, d
}

// listened is a listener of l for the device serial, closed with the test.
func listened(t *testing.T, l *Link, serial string) *Listener {
	t.Helper()
	ln, err := l.Listen(serial)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}
