package link_test

import (
	"context"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"senseboard"
	"senseboard/air"
	"senseboard/air/airtest"
	"senseboard/internal/await"
	"senseboard/internal/frametest"
	"senseboard/internal/loopback"
	"senseboard/link"
	"senseboard/transport/serial"
	"senseboard/wire"
)

// TestAcceptRetriesTemporaryErrors: the radio link's listener keeps
// serving through running out of file descriptors and connections aborted
// before they were accepted.
func TestAcceptRetriesTemporaryErrors(t *testing.T) {
	d, err := senseboard.New(senseboard.Config{StateDir: t.TempDir(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	carrier, err := air.Local(airtest.FreeLocal(t), air.Options{Missed: 1000, TokenFile: airtest.TokenFile(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer carrier.Close()
	ln, err := carrier.Listen(d.Serial())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang protection
	defer cancel()
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	p := &link.Peripheral{Server: &serial.Server{Device: d.Core}, Radio: d.Radio}
	go func() {
		done <- p.Serve(sctx, loopback.Failing(ln, syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED))
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	nc, err := carrier.Dial(ctx, d.Serial())
	if err != nil {
		t.Fatal(err)
	}
	c, err := phoneCentral.Open(ctx, "radio", nc, link.Handlers{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if m, err := c.Scan(ctx); err != nil || m.Serial != d.Serial() {
		t.Errorf("scan after the accept errors: %+v %v", m, err)
	}
}

// TestSilentStreamIsClosed: a stream that does not say hello is closed,
// and says why.
func TestSilentStreamIsClosed(t *testing.T) {
	d, err := senseboard.New(senseboard.Config{StateDir: t.TempDir(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p := &link.Peripheral{Server: &serial.Server{Device: d.Core, HelloTimeout: 20 * time.Millisecond}, Radio: d.Radio}
	dev, central := net.Pipe()
	done := make(chan struct{})
	go func() { p.ServeConn(context.Background(), dev); close(done) }()
	got := frametest.ReadUntil(t, central, func(f wire.Frame) bool { return f.Kind == wire.Error })
	if m := string(got[len(got)-1].Payload); !strings.Contains(m, "did not say hello") {
		t.Errorf("silent stream: %s", m)
	}
	await.Within(t, done, "the peripheral serves on after the stream was refused")
}
