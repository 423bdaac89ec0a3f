package main

import (
	"bytes"
	"strings"
	"testing"

	"senseboard/air/airtest"
)

// TestMain keeps what the programs of the tests keep in the user's state
// directory by default (the token of the computer's NATS server) in a
// directory of the tests' own.
func TestMain(m *testing.M) { airtest.Main(m) }

// TestHelpHidesNATSPassword: the help shows $SENSEBOARD_NATS as the
// default of --nats, without its password.
func TestHelpHidesNATSPassword(t *testing.T) {
	t.Setenv("SENSEBOARD_NATS", "nats://fleet:s3cret@10.0.0.1:4222")
	for _, cmd := range []string{"run", "bridge"} {
		var stdout, stderr bytes.Buffer
		run([]string{cmd, "-h"}, &stdout, &stderr)
		help := stdout.String() + stderr.String()
		if !strings.Contains(help, `(default "nats://***@10.0.0.1:4222")`) || strings.Contains(help, "s3cret") {
			t.Errorf("senseboard %s -h:\n%s", cmd, help)
		}
	}
}
