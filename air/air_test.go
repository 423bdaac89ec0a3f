package air_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"senseboard/air"
)

func Example() {
	dir, _ := os.MkdirTemp("", "air")
	defer os.RemoveAll(dir)
	ln, err := air.Listen(dir, "000123") // the device's program
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	devs, _ := air.List(dir) // a central's program
	for _, d := range devs {
		fmt.Println(d.Serial, filepath.Base(d.Path))
	}
	// Output: 000123 000123.sock
}

func TestListen(t *testing.T) {
	dir := t.TempDir()
	ln, err := air.Listen(dir, "000123")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := air.Listen(dir, "000123"); err == nil || !strings.Contains(err.Error(), "on the air already") {
		t.Errorf("a second program took the device's place: %v", err)
	}
	// a program that died leaves its socket; the next one replaces it
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(filepath.Join(dir, "000123.sock")); err != nil {
		t.Fatal(err)
	}
	ln, err = air.Listen(dir, "000123")
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	ln.Close()
	for _, bad := range []string{"", "../x", "a/b", ".hidden"} {
		if _, err := air.Listen(dir, bad); err == nil {
			t.Errorf("serial %q named a socket", bad)
		}
	}
	os.WriteFile(filepath.Join(dir, "notes.sock"), nil, 0o644) // not a socket
	if devs, err := air.List(dir); err != nil || len(devs) != 0 {
		t.Errorf("List: %v %v", devs, err)
	}
	if devs, err := air.List(filepath.Join(dir, "none")); err != nil || devs != nil {
		t.Errorf("List of a missing directory: %v %v", devs, err)
	}
}
