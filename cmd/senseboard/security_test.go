package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRefusesUnsafeFlags: serving beyond loopback without authentication,
// and unusable tokens and limits, are refused before anything starts.
func TestRefusesUnsafeFlags(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  string // SENSEBOARD_TOKEN, when not ""
		args []string
		want string
	}{
		{"device TCP on all interfaces", "", []string{"run", "--listen", "0.0.0.0:0"}, "give --listen-beyond-loopback"},
		{"device TCP without a host", "", []string{"run", "--listen", ":0"}, "the device's TCP port has no authentication"},
		{"device TCP on a LAN address", "", []string{"run", "--listen", "192.0.2.1:0"}, "serves beyond loopback"},
		{"fleet port on all interfaces", "", []string{"run", "--listen-fleet", "0.0.0.0:0"}, "--listen-fleet 0.0.0.0:0 serves beyond loopback"},
		{"fleet port without a port", "", []string{"run", "--listen-fleet", "127.0.0.1"}, `--listen-fleet "127.0.0.1"`},
		{"empty token", "", []string{"bridge", "--token", ""}, "the token is empty"},
		{"short token", "", []string{"bridge", "--token", "s3cret"}, "the minimum is 16"},
		{"token with a space", "", []string{"bridge", "--token", "0123456789 abcdef"}, "space or control"},
		{"whitespace token in the environment", "   ", []string{"bridge"}, "the token is empty"},
		{"short token in the environment", "abc", []string{"bridge"}, "the token has 3 characters; the minimum is 16"},
		{"no connections", "", []string{"bridge", "--http-max-conns", "0"}, "--http-max-conns 0"},
		{"an origin with a path", "", []string{"bridge", "--allow-origin", "http://localhost:5173/app"}, `--allow-origin: not an origin: "http://localhost:5173/app" has more than scheme, host and port`},
		{"an origin without a scheme", "", []string{"run", "--allow-origin", "localhost:5173"}, "the scheme is http or https"},
		{"every origin", "", []string{"bridge", "--allow-origin", "*"}, `--allow-origin: not an origin: "*"`},
		{"no device connections", "", []string{"run", "--max-conns", "0"}, "--max-conns 0"},
		{"no connections per device", "", []string{"run", "--max-conns-per-device", "-1"}, "--max-conns-per-device -1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv("SENSEBOARD_TOKEN", tt.env)
			}
			var stdout, stderr bytes.Buffer
			args := append(tt.args, "--nats", "none", "--state", t.TempDir(), "--http", "127.0.0.1:0")
			if tt.args[0] == "run" {
				args = append(args, "--pty", "none")
			}
			if code := run(args, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want %q", code, stderr.String(), tt.want)
			}
		})
	}
}

func TestWarnsBeyondLoopback(t *testing.T) {
	for _, tt := range []struct {
		addr string
		warn bool
	}{{"0.0.0.0:7809", true}, {":7809", true}, {"127.0.0.1:7809", false}, {"localhost:7809", false}, {"[::1]:7809", false}, {"none", false}} {
		var stderr bytes.Buffer
		if err := checkListen("listen", tt.addr, true, &stderr); err != nil {
			t.Errorf("%s: %v", tt.addr, err)
		}
		if got := strings.Contains(stderr.String(), "warning: the devices' TCP ports on "+tt.addr+" serve without authentication"); got != tt.warn {
			t.Errorf("%s: warned %v: %q", tt.addr, got, stderr.String())
		}
	}
}

// TestLoadRefusesFlags: senseboard load refuses flags it cannot follow
// before it connects to anything.
func TestLoadRefusesFlags(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"both addresses", []string{"--addr", "127.0.0.1:7809", "--fleet-addr", "127.0.0.1:7900"}, "--addr 127.0.0.1:7809 and --fleet-addr 127.0.0.1:7900: give one of them"},
		{"a serial without the fleet's port", []string{"--serial", "000200"}, "--serial 000200 needs --fleet-addr"},
		{"no devices", []string{"--devices", "0"}, "--devices 0: at least 1"},
		{"a share above 100", []string{"--min-delivery", "101"}, "--min-delivery 101: a percentage from 0 to 100"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"load"}, tt.args...), &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want %q", code, stderr.String(), tt.want)
			}
		})
	}
}
