package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"senseboard/client"
	"senseboard/profile"
	"senseboard/resource"
)

// buildSenseboard builds this command into a temporary directory.
func buildSenseboard(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "senseboard")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startDevice runs the program and connects to it.
func startDevice(t *testing.T, bin, state, addr string) (*exec.Cmd, *client.Conn) {
	t.Helper()
	cmd := exec.Command(bin, "run", "--state", state, "--listen", addr, "--pty", "none", "--air", filepath.Join(filepath.Dir(state), "air"), "--http", "none")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := client.Dial(context.Background(), "TCP"+addr, &client.Options{Timeout: 2 * time.Second})
		if err == nil {
			return cmd, c
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the device did not come up: %v\n%s", err, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type write struct {
	chip int
	addr uint32
	data []byte
}

func (w write) do(ctx context.Context, c *client.Conn) error {
	ints := make([]string, len(w.data))
	for i, b := range w.data {
		ints[i] = fmt.Sprint(b)
	}
	rec, _ := resource.RecordJSON("EepromData", []byte(`{"bytes": [`+strings.Join(ints, ",")+`]}`))
	env, err := c.Do(ctx, resource.Put, fmt.Sprintf("/Component/Eeprom/%d", w.chip), resource.Uint32(w.addr), rec)
	if err != nil {
		return err
	}
	if !env.OK() {
		return fmt.Errorf("PUT: %d %s", env.Response, env.Error)
	}
	return nil
}

// TestKillDuringWriteStorms kills a real device process with SIGKILL at
// random moments while a client writes EEPROM blocks as fast as it can, then
// restarts it from the same state directory: every write that was
// acknowledged is there, and the write in flight is there whole or not at all.
func TestKillDuringWriteStorms(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes in a loop")
	}
	bin := buildSenseboard(t)
	state := t.TempDir()
	addr := freeAddr(t)
	rng := rand.New(rand.NewPCG(7, 7))
	// the expected contents of a 4 KiB window at the start of each chip
	const window = 4096
	var mem [profile.Chips][window]byte
	for i := range mem {
		for j := range mem[i] {
			mem[i][j] = 0xFF
		}
	}
	acked := 0
	for round := range 8 {
		cmd, c := startDevice(t, bin, state, addr)
		ctx := context.Background()
		// check everything acknowledged so far (and the in-flight write)
		for chip := range profile.Chips {
			for off := 0; off < window; off += 128 {
				env, err := c.Do(ctx, resource.Get, fmt.Sprintf("/Component/Eeprom/%d", chip), resource.Uint32(uint32(off)), resource.Uint8(128))
				if err != nil || !env.OK() {
					t.Fatalf("round %d: read back: %v %+v", round, err, env)
				}
				var got struct{ Bytes []int }
				json.Unmarshal(env.Content, &got)
				for i, b := range got.Bytes {
					if byte(b) != mem[chip][off+i] {
						t.Fatalf("round %d: chip %d byte %d is %d, want %d", round, chip, off+i, b, mem[chip][off+i])
					}
				}
			}
		}
		// a storm, killed at a random moment
		killAt := time.Now().Add(time.Duration(30+rng.IntN(150)) * time.Millisecond)
		for time.Now().Before(killAt) {
			w := write{chip: rng.IntN(2), addr: uint32(rng.IntN(window - 64))}
			w.data = make([]byte, 1+rng.IntN(64))
			for i := range w.data {
				w.data[i] = byte(rng.IntN(256))
			}
			done := make(chan error, 1)
			go func() { done <- w.do(ctx, c) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("round %d: write: %v", round, err)
				}
				copy(mem[w.chip][w.addr:], w.data)
				acked++
			case <-time.After(time.Until(killAt)):
				// killed with this write in flight: after the restart it is
				// either all there or not at all
				cmd.Process.Signal(syscall.SIGKILL)
				cmd.Wait()
				c.Close()
				<-done
				cmd2, c2 := startDevice(t, bin, state, addr)
				env, err := c2.Do(ctx, resource.Get, fmt.Sprintf("/Component/Eeprom/%d", w.chip), resource.Uint32(w.addr), resource.Uint8(uint8(len(w.data))))
				if err != nil || !env.OK() {
					t.Fatalf("round %d: read the in-flight write: %v", round, err)
				}
				var got struct{ Bytes []int }
				json.Unmarshal(env.Content, &got)
				gotB := make([]byte, len(got.Bytes))
				for i, b := range got.Bytes {
					gotB[i] = byte(b)
				}
				old := mem[w.chip][w.addr : int(w.addr)+len(w.data)]
				switch {
				case bytes.Equal(gotB, w.data):
					copy(mem[w.chip][w.addr:], w.data)
				case bytes.Equal(gotB, old):
				default:
					t.Fatalf("round %d: the write in flight is torn: got % X, old % X, new % X", round, gotB, old, w.data)
				}
				cmd2.Process.Signal(syscall.SIGKILL)
				cmd2.Wait()
				c2.Close()
				cmd = nil
			}
			if cmd == nil {
				break
			}
		}
		if cmd != nil {
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			c.Close()
		}
	}
	if acked < 50 {
		t.Errorf("only %d writes acknowledged in 8 rounds", acked)
	}
	t.Logf("%d acknowledged writes survived 8 kills", acked)
}
