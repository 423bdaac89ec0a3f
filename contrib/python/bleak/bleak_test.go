// Package bleak_test runs scripts written for the sensor family's real
// sensors with the bleak library against a senseboard device, through the
// bridge's GSP WebSocket, with the stand-in in this directory on
// PYTHONPATH.
package bleak_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"senseboard"
	"senseboard/bridge"
	"senseboard/internal/await"
	"senseboard/internal/needs"
	"senseboard/link"
	"senseboard/phone"
	"senseboard/profile"
	"senseboard/transport/serial"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "0123456789abcdef0123"

// serve runs a device on real time and a bridge that reaches it, behind a
// token, until the test ends; it returns the bridge's address once the
// bridge has found the device.
func serve(t *testing.T) (url string, b *phone.Phone) {
	t.Helper()
	dir := t.TempDir()
	d, err := senseboard.New(senseboard.Config{Profile: profile.Default(), Seed: 1, StateDir: filepath.Join(dir, "000123")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	srv := &link.Peripheral{Server: &serial.Server{Device: d.Core}, Radio: d.Radio}
	b, err = phone.New(phone.Config{StateDir: filepath.Join(dir, "bridge"), Timeout: await.Guard, Local: []phone.Peripheral{{
		Serial: "000123",
		Faults: d.Faults,
		Dial: func(context.Context) (net.Conn, error) {
			dev, central := net.Pipe()
			wg.Go(func() { srv.ServeConn(ctx, dev) })
			return central, nil
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { b.Run(ctx) })
	hs := httptest.NewServer((&bridge.Server{Phone: b, Token: token}).Handler())
	t.Cleanup(func() {
		hs.Close()
		cancel()
		wg.Wait()
		d.Close()
	})
	// the bridge's first scan finds the device; the minute guards against a hang
	guard := time.Now().Add(time.Minute)
	for {
		_, err := b.Device("000123")
		if err == nil {
			break
		}
		if time.Now().After(guard) {
			t.Fatalf("the bridge has not found the device in a minute: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return hs.URL, b
}

// run runs a script of testdata with the stand-in on PYTHONPATH and
// returns its output's last line.
func run(t *testing.T, py, url string, env []string, args ...string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(runOutput(t, py, url, env, args...)), "\n")
	return lines[len(lines)-1]
}

// runOutput runs a script of testdata with the stand-in on PYTHONPATH and
// returns its output.
func runOutput(t *testing.T, py, url string, env []string, args ...string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, append([]string{filepath.Join("testdata", args[0])}, args[1:]...)...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+dir, "SENSEBOARD_BRIDGE="+url, "SENSEBOARD_TOKEN="+token, "PYTHONDONTWRITEBYTECODE=1")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", args[0], err, out)
	}
	return string(out)
}

// TestBleakScripts runs a GSP logging client of the kind written for real
// sensors (scan by the end of the name, stream, log, list, fetch, decode
// the SBEM, check the samples, clear), a script that reads the battery
// service's Battery Level and compares it with GSP's /System/Energy/Level,
// a client facing a stalled stream that the bridge's API injects and that
// it subscribes to again (docs/faults.md), and the stand-in's edges (the family's names, unknown
// addresses, one client at a time, the MTU, a device that resets),
// unmodified, through the bridge. The scripts run side by side, each on a
// device and bridge of its own.
func TestBleakScripts(t *testing.T) {
	py := needs.Python(t, "websockets", "Debian: apt-get install python3-websockets")
	t.Run("gsp_logger", func(t *testing.T) {
		t.Parallel()
		url, _ := serve(t)
		var summary struct {
			Log       int
			Bytes     int
			MeasAcc   int
			MeasECGmV int
		}
		last := run(t, py, url, nil, "gsp_logger.py", "0123", "2")
		if err := json.Unmarshal([]byte(last), &summary); err != nil {
			t.Fatalf("summary %q: %v", last, err)
		}
		if summary.Log != 1 || summary.Bytes == 0 || summary.MeasAcc < 52 || summary.MeasECGmV < 125 {
			t.Errorf("summary %+v", summary)
		}
	})
	t.Run("battery", func(t *testing.T) {
		t.Parallel()
		url, _ := serve(t)
		var battery struct {
			BAS    []int
			GSP    *int
			Status int
		}
		last := run(t, py, url, nil, "battery.py", "000123")
		if err := json.Unmarshal([]byte(last), &battery); err != nil {
			t.Fatalf("battery %q: %v", last, err)
		}
		if len(battery.BAS) != 2 || battery.GSP == nil || battery.Status != 200 ||
			battery.BAS[0] != *battery.GSP || battery.BAS[1] != *battery.GSP || *battery.GSP > 100 {
			t.Errorf("battery: %s; want the Battery Level twice, equal to GSP's /System/Energy/Level", last)
		}
	})
	t.Run("faults", func(t *testing.T) {
		t.Parallel()
		url, _ := serve(t)
		var summary struct {
			Stalled      int
			Link         int
			Resubscribed bool
			StallEndedBy string
		}
		last := run(t, py, url, nil, "faults.py", "000123")
		if err := json.Unmarshal([]byte(last), &summary); err != nil {
			t.Fatalf("summary %q: %v", last, err)
		}
		if summary.Stalled > 2 || summary.Link != 200 || !summary.Resubscribed || summary.StallEndedBy != "resubscribed" {
			t.Errorf("a stall through GSP: %s; want the stalled stream silent (at most 2 under way) while /Info answers, and back when subscribed again", last)
		}
	})
	t.Run("edges", func(t *testing.T) {
		t.Parallel()
		url, b := serve(t)
		st, err := b.Device("000123")
		if err != nil {
			t.Fatal(err)
		}
		env := []string{"SENSEBOARD_BLEAK_NAME=Movesense {serial}", "SENSEBOARD_MTU=23"}
		if last := run(t, py, url, env, "edges.py", "000123", st.Address); last != "OK" {
			t.Errorf("edges: %q", last)
		}
	})
}
