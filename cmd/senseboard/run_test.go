package main

import (
	"bytes"
	"strings"
	"testing"

	"senseboard/host"
)

// TestPrintRunning: a few devices are listed one by one; more get a
// summary of the first and the last, unless -v asks for each.
func TestPrintRunning(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		devices int
		all     bool
		listed  int    // devices listed one by one
		summary string // in the output, when not ""
	}{
		{2, false, 2, ""},
		{listEach, false, listEach, ""},
		{listEach + 1, false, 0, "senseboard: 9 devices, 000300 to 000308 ("},
		{listEach + 1, true, listEach + 1, ""},
	} {
		h, err := host.New(host.Config{StateDir: t.TempDir(), Serial: "000300", Devices: tt.devices, PTY: "none", Listen: "127.0.0.1:0", ListenFleet: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		printRunning(&out, h, nil, nil, tt.all)
		h.Close()
		text := out.String()
		if n := strings.Count(text, ") is running\n"); n != tt.listed {
			t.Errorf("%d devices (all %v): %d listed, want %d:\n%s", tt.devices, tt.all, n, tt.listed, text)
		}
		if tt.summary == "" {
			continue
		}
		last := h.Devices[tt.devices-1]
		for _, want := range []string{tt.summary, "  TCP          a port each: 000300 at " + h.Devices[0].TCP + " … 000308 at " + last.TCP + "\n",
			"  fleet port   " + h.Fleet + "/<serial>\n", "  state        " + h.Devices[0].StateDir + " to " + last.StateDir + "\n"} {
			if !strings.Contains(text, want) {
				t.Errorf("%d devices: no %q in the summary:\n%s", tt.devices, want, text)
			}
		}
		if strings.Contains(text, "serial lines") {
			t.Errorf("pseudo-terminals printed for devices with none:\n%s", text)
		}
	}
}
