package main

import (
	"testing"

	"senseboard/air/airtest"
)

// TestMain keeps what the programs of the tests keep in the user's state
// directory by default (the token of the computer's NATS server) in a
// directory of the tests' own.
func TestMain(m *testing.M) { airtest.Main(m) }
