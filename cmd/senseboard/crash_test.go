package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"senseboard/client"
	"senseboard/internal/clienttest"
	"senseboard/internal/gobuild"
	"senseboard/internal/loopback"
	"senseboard/profile"
	"senseboard/resource"
)

// buildMu makes the parallel tests' builds one at a time: the first links
// the program, the others find it in the go command's cache.
var buildMu sync.Mutex

// buildSenseboard builds this command into a temporary directory; it is
// linked once for all the tests of a run (see gobuild).
func buildSenseboard(t *testing.T) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	bin := filepath.Join(t.TempDir(), "senseboard")
	if err := gobuild.Program("senseboard/cmd/senseboard", bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// startDevice runs the program and connects to it. env is added to the
// program's environment.
func startDevice(t *testing.T, bin, state, addr string, env ...string) (*exec.Cmd, *client.Conn) {
	t.Helper()
	cmd := exec.Command(bin, "run", "--state", state, "--listen", addr, "--pty", "none", "--nats", "none", "--http", "none")
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := clienttest.Dial(context.Background(), "TCP"+addr, nil)
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

// A writer writes random blocks into its own span of a chip, one at a
// time, and keeps what the span must hold.
type writer struct {
	chip, base int
	want       []byte // the span as acknowledged writes left it
	rng        *rand.Rand
	conn       *client.Conn
	pending    *block // sent, not acknowledged: there whole or not at all
}

type block struct {
	addr int // within the span
	data []byte
}

func (w *writer) next() block {
	b := block{addr: w.rng.IntN(len(w.want) - 64)}
	b.data = make([]byte, 1+w.rng.IntN(64))
	for i := range b.data {
		b.data[i] = byte(w.rng.IntN(256))
	}
	return b
}

// put writes a block and reports whether the device acknowledged it.
func (w *writer) put(ctx context.Context, b block) error {
	ints := make([]string, len(b.data))
	for i, v := range b.data {
		ints[i] = fmt.Sprint(v)
	}
	rec, err := resource.RecordJSON("EepromData", []byte(`{"bytes": [`+strings.Join(ints, ",")+`]}`))
	if err != nil {
		return err
	}
	env, err := w.conn.Do(ctx, resource.Put, fmt.Sprintf("/Component/Eeprom/%d", w.chip), resource.Uint32(uint32(w.base+b.addr)), rec)
	if err != nil {
		return err
	}
	if !env.OK() {
		return fmt.Errorf("PUT: %d %s", env.Response, env.Error)
	}
	return nil
}

// check reads the span back: it holds every acknowledged write, and the
// write in flight at the kill whole or not at all.
func (w *writer) check(ctx context.Context, c *client.Conn) error {
	got := make([]byte, 0, len(w.want))
	for off := 0; off < len(w.want); off += 128 {
		env, err := c.Do(ctx, resource.Get, fmt.Sprintf("/Component/Eeprom/%d", w.chip), resource.Uint32(uint32(w.base+off)), resource.Uint8(128))
		if err != nil || !env.OK() {
			return fmt.Errorf("read back: %v %+v", err, env)
		}
		var data struct{ Bytes []int }
		if err := json.Unmarshal(env.Content, &data); err != nil {
			return err
		}
		for _, b := range data.Bytes {
			got = append(got, byte(b))
		}
	}
	if bytes.Equal(got, w.want) {
		w.pending = nil
		return nil
	}
	if p := w.pending; p != nil {
		with := append([]byte(nil), w.want...)
		copy(with[p.addr:], p.data)
		if bytes.Equal(got, with) {
			w.want, w.pending = with, nil
			return nil
		}
	}
	for i := range got {
		if got[i] != w.want[i] {
			return fmt.Errorf("chip %d byte %d is %d, want %d (write in flight: %v)", w.chip, w.base+i, got[i], w.want[i], w.pending != nil)
		}
	}
	return errors.New("short read")
}

// orphans lists what writes left behind under dir: any name starting
// with a dot (state files never do; temporary files of atomic writes
// always do), at any depth.
func orphans(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir && strings.HasPrefix(e.Name(), ".") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// entries lists what is in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestKillDuringWriteStorms kills a real device process with SIGKILL while
// several clients write EEPROM blocks into spans of their own, each as
// fast as the device acknowledges, and restarts it from the same state
// directory: every acknowledged write is there, and each write in flight
// is there whole or not at all. A round ends with a kill after a random
// number of acknowledged writes, so the test does the same work on a fast
// machine and a slow one; it stops once enough writes were acknowledged.
// After each start neither the state directory nor $TMPDIR holds anything
// the writes left behind.
func TestKillDuringWriteStorms(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kills processes in a loop")
	}
	const (
		writers   = 4
		span      = 1024 // bytes of each writer
		wantAcked = 120  // acknowledged writes to make in all
		maxRounds = 100  // about 5 are needed; more means writes fail
	)
	bin := buildSenseboard(t)
	root := t.TempDir()
	state, tmp := filepath.Join(root, "state"), filepath.Join(root, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	addr := loopback.FreeAddr(t)
	rng := rand.New(rand.NewPCG(7, 7))
	ws := make([]*writer, writers)
	for i := range ws {
		ws[i] = &writer{chip: i % profile.Chips, base: i / profile.Chips * span, want: bytes.Repeat([]byte{0xFF}, span),
			rng: rand.New(rand.NewPCG(7, uint64(i)))}
	}
	ctx := context.Background()
	start := func(round int) (*exec.Cmd, *client.Conn) {
		cmd, c := startDevice(t, bin, state, addr, "TMPDIR="+tmp)
		for _, w := range ws {
			if err := w.check(ctx, c); err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if o := orphans(t, state); len(o) > 0 {
			t.Errorf("round %d: the state directory holds %v after the start", round, o)
		}
		if e := entries(t, tmp); len(e) > 0 {
			t.Errorf("round %d: TMPDIR holds %v", round, e)
		}
		return cmd, c
	}
	acked, round := 0, 0
	for ; acked < wantAcked; round++ {
		if round == maxRounds {
			t.Fatalf("only %d writes acknowledged in %d rounds", acked, round)
		}
		cmd, c := start(round)
		c.Close()
		// a storm, with the kill after a random number of acknowledged writes
		killAfter := int32(1 + rng.IntN(2*wantAcked/5))
		var n atomic.Int32
		var killed atomic.Bool
		kill := make(chan struct{})
		var once sync.Once
		var wg sync.WaitGroup
		for _, w := range ws {
			conn, err := clienttest.Dial(ctx, "TCP"+addr, nil)
			if err != nil {
				t.Fatal(err)
			}
			w.conn = conn
			wg.Go(func() {
				for {
					b := w.next()
					w.pending = &b
					if err := w.put(ctx, b); err != nil {
						if !killed.Load() {
							t.Errorf("round %d: write before the kill: %v", round, err)
							once.Do(func() { close(kill) })
						}
						return
					}
					copy(w.want[b.addr:], b.data)
					w.pending = nil
					if n.Add(1) == killAfter {
						once.Do(func() { close(kill) })
					}
				}
			})
		}
		<-kill
		killed.Store(true)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		for _, w := range ws {
			w.conn.Close()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		acked += int(n.Load())
	}
	// the last round's writes, read back, and a clean stop
	cmd, c := start(round)
	c.Close()
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if o := orphans(t, state); len(o) > 0 {
		t.Errorf("the state directory holds %v after a clean stop", o)
	}
	if e := entries(t, tmp); len(e) > 0 {
		t.Errorf("TMPDIR holds %v", e)
	}
	t.Logf("%d acknowledged writes by %d clients survived %d kills", acked, writers, round)
}
