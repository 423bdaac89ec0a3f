package air_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"senseboard/air"
	"senseboard/air/airtest"
	"senseboard/internal/await"
)

// fast makes adverts and keepalives frequent, so that the tests see
// expiries soon; nothing in the tests depends on how soon.
// Missed is large, so that a busy machine does not end streams; the tests
// of what silence does use expiring.
var (
	fast     = air.Options{Interval: 20 * time.Millisecond, Missed: 1000, ReconnectWait: 20 * time.Millisecond}
	expiring = air.Options{Interval: 20 * time.Millisecond, Missed: 3, ReconnectWait: 20 * time.Millisecond}
)

// eventually polls ok until it holds; the deadline only guards a hang.
func eventually(t testing.TB, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(await.Guard)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func serials(devs []air.Peripheral) string {
	var s []string
	for _, d := range devs {
		s = append(s, d.Serial)
	}
	return strings.Join(s, ",")
}

// echo serves one stream: it writes back what it reads.
func echo(t testing.TB, ln *air.Listener) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
}

// dialEcho puts device 000123 on the air on dev, echoing, and dials it
// from phone.
func dialEcho(t *testing.T, dev, phone *air.Link) net.Conn {
	t.Helper()
	ln, err := dev.Listen("000123")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, ln)
	ctx, cancel := context.WithTimeout(context.Background(), await.Guard) // hang guard
	defer cancel()
	c, err := phone.Dial(ctx, "000123")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func Example() {
	ln0, _ := net.Listen("tcp", "127.0.0.1:0") // a free port, for the example
	addr := ln0.Addr().String()
	ln0.Close()
	device, err := air.Local(addr, air.Options{}) // the first program starts the server
	if err != nil {
		panic(err)
	}
	defer device.Close()
	phone, err := air.Local(addr, air.Options{}) // the next joins it
	if err != nil {
		panic(err)
	}
	defer phone.Close()

	ln, _ := device.Listen("000123")
	defer ln.Close()
	go func() {
		c, _ := ln.Accept()
		io.Copy(c, c) // a device that echoes
	}()

	dir, _ := phone.Watch()
	for len(dir.Peripherals()) == 0 {
		time.Sleep(time.Millisecond)
	}
	fmt.Println(dir.Peripherals()[0].Serial, device.Embedded(), phone.Embedded())
	c, _ := phone.Dial(context.Background(), "000123")
	c.Write([]byte("hello"))
	b := make([]byte, 5)
	io.ReadFull(c, b)
	fmt.Println(string(b))
	c.Close()
	// Output:
	// 000123 true false
	// hello
}

// TestStream: bytes arrive in order and whole, large writes too; a close
// reads as io.EOF after what was sent; deadlines work.
func TestStream(t *testing.T) {
	addr := airtest.FreeLocal(t)
	dev, phone := airtest.Local(t, addr, fast), airtest.Local(t, addr, fast)
	c := dialEcho(t, dev, phone)
	ctx, cancel := context.WithTimeout(context.Background(), await.Guard) // hang guard
	defer cancel()
	want := make([]byte, 300_000) // several messages
	for i := range want {
		want[i] = byte(i * 7)
	}
	go func() {
		for i := 0; i < len(want); i += 1000 {
			c.Write(want[i : i+1000])
		}
	}()
	got := make([]byte, len(want))
	c.SetReadDeadline(time.Now().Add(await.Guard))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("echo: %v, equal %v", err, bytes.Equal(got, want))
	}
	c.SetReadDeadline(time.Now().Add(-time.Second))
	if _, err := c.Read(got); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read past the deadline: %v", err)
	}
	c.SetReadDeadline(time.Time{})
	if c.LocalAddr().Network() != "nats" || !strings.Contains(c.RemoteAddr().String(), "000123") {
		t.Errorf("addresses %v %v", c.LocalAddr(), c.RemoteAddr())
	}
	c.Close()
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after close: %v", err)
	}

	// the device closes: the central reads what came before, then EOF
	c2, err := phone.Dial(ctx, "000123")
	if err != nil {
		t.Fatal(err)
	}
	c2.Write([]byte("bye"))
	b := make([]byte, 3)
	io.ReadFull(c2, b)
	c2.Close()
	if string(b) != "bye" {
		t.Errorf("read %q", b)
	}
}

// TestHandle: a listener that hands its streams to a function serves them
// with no goroutine waiting in Accept, each stream as Accept gives it.
func TestHandle(t *testing.T) {
	addr := airtest.FreeLocal(t)
	dev, phone := airtest.Local(t, addr, fast), airtest.Local(t, addr, fast)
	ln, err := dev.Listen("000123")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	var handed atomic.Int32
	ln.Handle(func(c net.Conn) {
		handed.Add(1)
		wg.Go(func() { io.Copy(c, c); c.Close() })
	})
	ctx, cancel := context.WithTimeout(context.Background(), await.Guard) // hang guard
	defer cancel()
	for _, msg := range []string{"one", "two"} {
		c, err := phone.Dial(ctx, "000123")
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(msg))
		b := make([]byte, len(msg))
		c.SetReadDeadline(time.Now().Add(await.Guard))
		if _, err := io.ReadFull(c, b); err != nil || string(b) != msg {
			t.Errorf("echo of %q: %q, %v", msg, b, err)
		}
		c.Close()
	}
	if n := handed.Load(); n != 2 {
		t.Errorf("%d streams handed to the function, want 2", n)
	}
}

// TestOneProgramPerDevice: a second program cannot put the same device on
// the air; nor can one put a serial that is no subject token.
func TestOneProgramPerDevice(t *testing.T) {
	addr := airtest.FreeLocal(t)
	a, b := airtest.Local(t, addr, fast), airtest.Local(t, addr, fast)
	ln, err := a.Listen("000123")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Listen("000123"); !errors.Is(err, air.ErrOnAir) {
		t.Errorf("a second program took the device: %v", err)
	}
	if _, err := a.Listen("000123"); !errors.Is(err, air.ErrOnAir) {
		t.Errorf("the same program took the device twice: %v", err)
	}
	ln.Close()
	ln2, err := b.Listen("000123")
	if err != nil {
		t.Fatalf("after the first left: %v", err)
	}
	ln2.Close()
	for _, bad := range []string{"", "a.b", "*", ">", "a b", strings.Repeat("1", 65)} {
		if _, err := a.Listen(bad); !errors.Is(err, air.ErrSerial) {
			t.Errorf("serial %q: %v", bad, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), await.Guard)
	defer cancel()
	if _, err := b.Dial(ctx, "000999"); !errors.Is(err, air.ErrNotOnAir) || err.Error() != "air: device 000999 is not on the air" {
		t.Errorf("dial a device nobody serves: %v; want %q", err, "air: device 000999 is not on the air")
	}
}

// TestDevicesComeAndGo: the directory sees devices from their adverts;
// one that says goodbye leaves at once, one whose program dies leaves when
// its adverts stop, each with why; the streams of a program that died end
// with ErrLost.
func TestDevicesComeAndGo(t *testing.T) {
	addr := airtest.FreeLocal(t)
	server := airtest.Local(t, addr, expiring) // keeps the server up
	phone := airtest.Local(t, addr, expiring)
	dir, err := phone.Watch()
	if err != nil {
		t.Fatal(err)
	}
	o := expiring
	o.TokenFile = airtest.TokenFile(t)
	dev, err := air.Local(addr, o)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := dev.Listen("000200")
	b, _ := dev.Listen("000201")
	echo(t, b)
	eventually(t, "both devices seen", func() bool { return serials(dir.Peripherals()) == "000200,000201" })

	a.Close()
	eventually(t, "000200 left", func() bool { return serials(dir.Peripherals()) == "000201" })
	if why := dir.Why("000200"); !strings.Contains(why, "went off the air: it left the air") {
		t.Errorf("why 000200 left: %q", why)
	}

	ctx, cancel := context.WithTimeout(context.Background(), await.Guard)
	defer cancel()
	c, err := phone.Dial(ctx, "000201")
	if err != nil {
		t.Fatal(err)
	}
	air.Crash(dev) // the program dies without a word
	eventually(t, "000201 left", func() bool { return serials(dir.Peripherals()) == "" })
	if why := dir.Why("000201"); !strings.Contains(why, "its adverts stopped") || !strings.Contains(why, "went away") {
		t.Errorf("why 000201 left: %q", why)
	}
	c.SetReadDeadline(time.Now().Add(await.Guard))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, air.ErrLost) || !strings.Contains(err.Error(), "stopped answering") {
		t.Errorf("a stream to a program that died: %v", err)
	}
	_ = server
}

// TestAdvertCarriesScan: a device's adverts carry what a scan of it sees
// now, so that a central reads it from its directory without a stream;
// the goodbye carries none.
func TestAdvertCarriesScan(t *testing.T) {
	addr := airtest.FreeLocal(t)
	dev, phone := airtest.Local(t, addr, fast), airtest.Local(t, addr, fast)
	dir, err := phone.Watch()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := dev.Listen("000123")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := dir.Scan("000123"); ok {
		t.Error("a scan of a device whose program says nothing of it")
	}
	var mu sync.Mutex
	scan := `{"serial":"000123","advertising":true}`
	ln.SetScan(func() []byte {
		mu.Lock()
		defer mu.Unlock()
		return []byte(scan)
	})
	seen := func(want string) func() bool {
		return func() bool { b, ok := dir.Scan("000123"); return ok && string(b) == want }
	}
	eventually(t, "the scan in the adverts", seen(scan))
	mu.Lock()
	scan = `{"serial":"000123","advertising":false}`
	mu.Unlock()
	eventually(t, "the next scan in the adverts", seen(scan))
	if ps := dir.Peripherals(); len(ps) != 1 || string(ps[0].Scan) != scan {
		t.Errorf("peripherals %+v", ps)
	}
	ln.Close()
	eventually(t, "the device gone", func() bool { _, ok := dir.Scan("000123"); return !ok })
}

// TestDeadPeerUnderBacklog: while the messages of one stream keep the
// link's delivery behind, a stream whose peer died is still noticed: each
// stream is judged by its own peer's messages, not by the backlog.
func TestDeadPeerUnderBacklog(t *testing.T) {
	addr := airtest.FreeLocal(t)
	phone := airtest.Local(t, addr, expiring) // runs the server
	busyDev := airtest.Local(t, addr, expiring)
	o := expiring
	o.TokenFile = airtest.TokenFile(t)
	deadDev, err := air.Local(addr, o)
	if err != nil {
		t.Fatal(err)
	}
	busyLn, _ := busyDev.Listen("000200")
	defer busyLn.Close()
	deadLn, _ := deadDev.Listen("000201")
	ctx, cancel := context.WithTimeout(context.Background(), await.Guard) // hang guard
	defer cancel()
	busy, err := phone.Dial(ctx, "000200")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dead, err := phone.Dial(ctx, "000201")
	if err != nil {
		t.Fatal(err)
	}
	deadLn.Accept()
	busyConn, err := busyLn.Accept()
	if err != nil {
		t.Fatal(err)
	}
	// the busy stream's reader is slow, and its device writes without
	// pause: the phone's delivery never catches up
	busy.Push(func([]byte) { time.Sleep(2 * time.Millisecond) }, func(error) {})
	stop := make(chan struct{})
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := busyConn.Write([]byte("x")); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	defer func() { close(stop); <-writer }()
	air.Crash(deadDev) // its program dies without a word
	dead.SetReadDeadline(time.Now().Add(await.Guard))
	if _, err := dead.Read(make([]byte, 1)); !errors.Is(err, air.ErrLost) || !strings.Contains(err.Error(), "stopped answering") {
		t.Errorf("a stream to a program that died, behind a backlog: %v", err)
	}
}

// TestSlowReaderCannotStallDevice: a central that does not read fills its
// bounded buffer; its stream closes with ErrFellBehind, and the device's
// writes never wait: the device learns of the close and goes on.
func TestSlowReaderCannotStallDevice(t *testing.T) {
	addr := airtest.FreeLocal(t)
	o := fast
	o.ReadBuffer = 64 << 10
	dev, phone := airtest.Local(t, addr, o), airtest.Local(t, addr, o)
	ln, _ := dev.Listen("000123")
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), await.Guard)
	defer cancel()
	c, err := phone.Dial(ctx, "000123")
	if err != nil {
		t.Fatal(err)
	}
	d, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1024)
	var werr error
	for werr == nil && ctx.Err() == nil { // the device writes until told
		_, werr = d.Write(chunk)
	}
	if !errors.Is(werr, air.ErrLost) || !strings.Contains(werr.Error(), "fell behind") {
		t.Errorf("the device's write: %v", werr)
	}
	if _, err := d.Read(chunk); !errors.Is(err, air.ErrLost) {
		t.Errorf("the device's read: %v", err)
	}
	// the central reads what fit, then why it ended
	var rerr error
	for rerr == nil {
		_, rerr = c.Read(chunk)
	}
	if !errors.Is(rerr, air.ErrFellBehind) {
		t.Errorf("the central's read: %v", rerr)
	}
}

// TestLocalServerTakeover: when the program that runs the computer's
// server stops, another takes over, with the same token, and its devices
// are seen again. The streams open then end with ErrLost, which says that
// the connection to the server was lost; new ones open.
func TestLocalServerTakeover(t *testing.T) {
	t.Parallel()
	addr := airtest.FreeLocal(t)
	o := fast
	o.TokenFile = airtest.TokenFile(t)
	first, err := air.Local(addr, o)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Embedded() {
		t.Fatal("the first program does not run the server")
	}
	dev, phone := airtest.Local(t, addr, fast), airtest.Local(t, addr, fast)
	if dev.Embedded() || phone.Embedded() {
		t.Fatal("a later program started a server of its own")
	}
	ln, err := dev.Listen("000123")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, ln)
	dir, _ := phone.Watch()
	eventually(t, "device seen", func() bool { return serials(dir.Peripherals()) == "000123" })
	ctx, cancel := context.WithTimeout(context.Background(), await.Guard)
	defer cancel()
	open, err := phone.Dial(ctx, "000123")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	first.Close()
	eventually(t, "another program runs the server", func() bool { return dev.Embedded() != phone.Embedded() })
	eventually(t, "both connected again", func() bool { return dev.Connected() && phone.Connected() })
	eventually(t, "device seen again", func() bool { return serials(dir.Peripherals()) == "000123" })
	if _, err := open.Read(make([]byte, 1)); !errors.Is(err, air.ErrLost) || !strings.Contains(err.Error(), "the connection to the NATS server was lost") {
		t.Errorf("a stream open during the takeover: %v", err)
	}
	if nc, err := nats.Connect("nats://"+addr, nats.MaxReconnects(0)); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("a client without the token, after the takeover: %v", err)
		if nc != nil {
			nc.Close()
		}
	}
	var c net.Conn
	eventually(t, "dial after the takeover", func() bool { c, err = phone.Dial(ctx, "000123"); return err == nil })
	c.Write([]byte("hi"))
	b := make([]byte, 2)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "hi" {
		t.Errorf("echo after the takeover: %q %v", b, err)
	}
	c.Close()
}

func TestLocalAddress(t *testing.T) {
	for _, bad := range []string{"10.1.2.3:4222", "example.com:4222", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:x"} {
		if _, err := air.Local(bad, fast); err == nil {
			t.Errorf("local address %q accepted", bad)
		}
	}
	if _, err := air.Join("nats://user:secret@127.0.0.1:1", fast); !errors.Is(err, air.ErrNoServer) || strings.Contains(err.Error(), "secret") {
		t.Errorf("join a server that is not there: %v", err)
	}
}

func TestOpenRefusesWhatItDoesNotKnow(t *testing.T) {
	for _, where := range []string{"", "nats", "http://127.0.0.1:4222", "127.0.0.1:4222", "local:", "local:x", "nats://a:4222,ftp://b"} {
		if _, err := air.Open(where, fast); err == nil {
			t.Errorf("--nats %q accepted", where)
		}
	}
}

// TestDeviceCloseReason: a stream the device closes reads as io.EOF at
// the central after what was sent; one it closes after it left the air,
// as an ErrLost that says why it left.
func TestDeviceCloseReason(t *testing.T) {
	addr := airtest.FreeLocal(t)
	dev, phone := airtest.Local(t, addr, fast), airtest.Local(t, addr, fast)
	for _, tt := range []struct {
		serial string
		leave  string // why the device left the air before it closed; "" for not
		want   string // in the central's error; "" for io.EOF
	}{
		{"000120", "", ""},
		{"000121", "switched off", "device 000121 went off the air: switched off"},
	} {
		serial := tt.serial
		ln, err := dev.Listen(serial)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), await.Guard) // hang guard
		accepted := make(chan net.Conn, 1)
		go func() {
			c, _ := ln.Accept()
			accepted <- c
		}()
		c, err := phone.Dial(ctx, serial)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		d := <-accepted
		d.Write([]byte("bye"))
		if tt.leave != "" {
			ln.Leave(tt.leave)
		}
		d.Close()
		b, err := io.ReadAll(c)
		if string(b) != "bye" || tt.want == "" && err != nil || tt.want != "" && (!errors.Is(err, air.ErrLost) || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("left %q: read %q, %v; want the reason %q", tt.leave, b, err, tt.want)
		}
		c.Close()
		ln.Close()
	}
}
