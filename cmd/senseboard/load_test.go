package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"senseboard/internal/loopback"
)

// TestLoadOverNATSEndToEnd runs a program whose devices are on the radio
// link of a NATS server of the test's own, and senseboard load --nats
// reaches every device as a central from another program; a serial no
// program serves is named, with what to check.
func TestLoadOverNATSEndToEnd(t *testing.T) {
	t.Parallel()
	bin := buildSenseboard(t)
	nats := "local:" + loopback.FreePort(t)
	out := startProgram(t, bin, "run", "--devices", "3", "--serial", "000800", "--nats", nats,
		"--listen", "none", "--pty", "none", "--http", "none", "--state", t.TempDir())
	waitRunning(t, out)

	var stdout, stderr bytes.Buffer
	code := run([]string{"load", "--nats", nats, "--serial", "000800", "--devices", "3", "--subscribe", "/Meas/ECG/125",
		"--duration", "1s", "--every", "1s", "--min-delivery", "0"}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "devices 3/3") || !strings.Contains(stdout.String(), "radio messages") {
		t.Errorf("load --nats: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}

	stdout.Reset()
	stderr.Reset()
	code = run([]string{"load", "--nats", nats, "--serial", "000900", "--subscribe", "/Meas/HR", "--duration", "1s"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "device 000900 is not on the air") || !strings.Contains(stderr.String(), "does senseboard run serve these serials") {
		t.Errorf("load --nats of a device not on the air: exit %d\n%s", code, stderr.String())
	}
}

// TestLoadFlagsRefused: flags that do not go together are refused before
// anything is reached, naming them.
func TestLoadFlagsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nats", "local", "--addr", "127.0.0.1:7809"}, "--nats and --addr or --fleet-addr: give one of them"},
		{[]string{"--nats", "local", "--fleet-addr", "127.0.0.1:7900"}, "--nats and --addr or --fleet-addr: give one of them"},
		{[]string{"--serial", "000200"}, "--serial 000200 needs --fleet-addr or --nats"},
		{[]string{"--pass-key", "123456"}, "--pass-key is for the radio link: give --nats too"},
		{[]string{"--conn-interval", "15ms"}, "--conn-interval is for the radio link: give --nats too"},
		{[]string{"--nats", "local", "--serial", "ABC"}, `first serial "ABC"`},
		{[]string{"--nats", "http://example.com"}, "give local, local:PORT, or URLs nats://host:port"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"load"}, tc.args...), &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("load %s: exit %d, %s; want 1 and %q", strings.Join(tc.args, " "), code, stderr.String(), tc.want)
		}
	}
}

// waitRunning waits until a program started with startProgram says it
// runs.
func waitRunning(t *testing.T, out *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang guard
	for !strings.Contains(out.String(), "Press Ctrl-C to stop.") {
		if time.Now().After(deadline) {
			t.Fatalf("the program did not say it runs:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
