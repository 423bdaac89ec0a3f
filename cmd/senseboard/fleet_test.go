package main

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"senseboard/client"
	"senseboard/internal/clienttest"
)

// TestFleetPortEndToEnd runs a program whose devices share one TCP port
// (run --listen-fleet): it prints the fleet port (TestPrintRunning checks
// the rest of the summary), answers each device by serial, refuses a serial it does not
// serve, and senseboard load --fleet-addr reaches every device.
func TestFleetPortEndToEnd(t *testing.T) {
	t.Parallel()
	bin := buildSenseboard(t)
	const devices = listEach + 1 // summarised
	out := startProgram(t, bin, "run", "--devices", strconv.Itoa(devices), "--serial", "000700", "--listen-fleet", "127.0.0.1:0",
		"--pty", "none", "--nats", "none", "--http", "none", "--state", t.TempDir())
	waitRunning(t, out)
	text := out.String()
	m := regexp.MustCompile(`(?m)^  fleet port   (127\.0\.0\.1:\d+)/<serial>\n +wbcmd --port TCP127\.0\.0\.1:\d+/000700 --path /Info$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no fleet port line:\n%s", text)
	}
	fleet := m[1]

	ctx := context.Background()
	for _, serial := range []string{"000700", "000708"} {
		c, err := clienttest.Dial(ctx, "TCP"+fleet+"/"+serial, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Welcome().Serial; got != serial {
			t.Errorf("asked the fleet port for %s, welcomed by %s", serial, got)
		}
		c.Close()
	}
	_, err := clienttest.Dial(ctx, "TCP"+fleet+"/000709", nil)
	if !errors.Is(err, client.ErrRefused) || !strings.Contains(err.Error(), `"000709", which this port does not serve; it serves 9 devices, 000700 to 000708`) {
		t.Errorf("a serial the port does not serve: %v; want %v naming it", err, client.ErrRefused)
	}

	var stdout, stderr bytes.Buffer
	code := run([]string{"load", "--fleet-addr", fleet, "--serial", "000700", "--devices", strconv.Itoa(devices), "--subscribe", "/Meas/HR",
		"--duration", "1s", "--every", "1s", "--min-delivery", "0"}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "devices 9/9") {
		t.Errorf("load --fleet-addr: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}
