package bleak_test

import (
	"regexp"
	"strings"
	"testing"

	"senseboard/internal/needs"
)

// TestExample runs the README's example, example.py, against a device and
// a bridge: it finds the device by the end of its name, says HELLO, and
// prints the samples of five notifications of /Meas/Acc/13.
func TestExample(t *testing.T) {
	t.Parallel()
	py := needs.Python(t, "websockets", "Debian: apt-get install python3-websockets")
	url, _ := serve(t)
	out := runOutput(t, py, url, nil, "../example.py", "0123")
	t.Logf("example.py:\n%s", out)
	if !strings.Contains(out, "hello: [b'000123', b'Senseboard']") {
		t.Errorf("no HELLO of device 000123 in:\n%s", out)
	}
	if n := len(regexp.MustCompile(`(?m)^\d+ \['-?\d+\.\d\d -?\d+\.\d\d -?\d+\.\d\d'`).FindAllString(out, -1)); n != 5 {
		t.Errorf("%d lines of samples, want 5:\n%s", n, out)
	}
}
