package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"senseboard/client"
	"senseboard/internal/await"
	"senseboard/internal/loopback"
	"senseboard/resource"
	"senseboard/sbem"
)

type logEntries struct {
	Elements []struct {
		ID       uint32 `json:"Id"`
		Modified uint32 `json:"ModificationTimestamp"`
		Size     uint64 `json:"Size"`
	} `json:"elements"`
}

// Logs survive kill -9: what the data logger had written when the process
// was killed is in the Logbook when it starts again, and decodes; its
// modification time is not earlier than the last one it showed.
func TestLogsSurviveKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and kills the program")
	}
	bin := buildSenseboard(t)
	state := filepath.Join(t.TempDir(), "state")
	addr := loopback.FreeAddr(t)
	ctx := context.Background()

	cmd, c := startDevice(t, bin, state, addr)
	do := func(op resource.Op, path string, params ...resource.Value) json.RawMessage {
		t.Helper()
		env, err := c.Do(ctx, op, path, params...)
		if err != nil || !env.OK() {
			t.Fatalf("%s %s: %v %+v", op, path, err, env)
		}
		return json.RawMessage(env.Content)
	}
	cfg, _ := resource.RecordJSON("DataLoggerConfig", []byte(`{"dataEntries":{"dataEntry":[{"path":"/Meas/Acc/52"},{"path":"/Time/Detailed"}]}}`))
	do(resource.Put, "/Mem/DataLogger/Config", cfg)
	do(resource.Put, "/Mem/DataLogger/State", resource.Uint8(3))
	var before uint64
	var modified uint32
	for before < 3000 { // a few flushes of about 1.3 kB a second
		time.Sleep(200 * time.Millisecond)
		var e logEntries
		json.Unmarshal(do(resource.Get, "/Mem/Logbook/Entries"), &e)
		if len(e.Elements) == 1 {
			before, modified = e.Elements[0].Size, e.Elements[0].Modified
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	c.Close()

	cmd, c = startDevice(t, bin, state, addr)
	defer func() {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		c.Close()
	}()
	var e logEntries
	json.Unmarshal(do(resource.Get, "/Mem/Logbook/Entries"), &e)
	if len(e.Elements) != 1 || e.Elements[0].ID != 1 || e.Elements[0].Size < before {
		t.Fatalf("after kill -9: entries %+v, want log 1 of at least %d bytes", e, before)
	}
	if m := e.Elements[0].Modified; m < modified {
		t.Errorf("after kill -9: ModificationTimestamp %d, %d before; a log's time never goes back", m, modified)
	}
	var data struct{ Bytes []byte }
	var ints struct{ Bytes []int }
	json.Unmarshal(do(resource.Get, "/Mem/Logbook/byId/{LogId}/Data", resource.Int32(1)), &ints)
	for _, b := range ints.Bytes {
		data.Bytes = append(data.Bytes, byte(b))
	}
	// The same log read by subscription, the fast transfer, over TCP.
	if got := readBySubscription(t, c, 1); !bytes.Equal(got, data.Bytes) {
		t.Errorf("by subscription: %d bytes, by GET %d; equal %v", len(got), len(data.Bytes), bytes.Equal(got, data.Bytes))
	}
	recs, err := sbem.Decode(data.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		for _, v := range r.Values {
			if v.Path == "MeasAcc.ArrayAcc.x" {
				n++
			}
		}
	}
	if n < 52 {
		t.Errorf("%d Acc samples survived, want at least a second's 52", n)
	}
	var st json.RawMessage = do(resource.Get, "/Mem/DataLogger/State")
	if string(st) != "2" {
		t.Errorf("logger state %s after the restart, want 2 (READY)", st)
	}
}

// readBySubscription reads a log through a subscription to its data, as
// the family's clients do: notifications of {offset, bytes} in order, and
// an empty one at the end, after which it unsubscribes.
func readBySubscription(t *testing.T, c *client.Conn, id int32) []byte {
	t.Helper()
	ctx := context.Background()
	sub, env, err := c.Subscribe(ctx, "/Mem/Logbook/byId/{LogId}/Data", resource.Int32(id))
	if err != nil || sub == nil {
		t.Fatalf("SUBSCRIBE log %d: %v %+v", id, err, env)
	}
	var data []byte
	for {
		n, open := await.Next(t, sub.C(), fmt.Sprintf("the next notification of log %d's data did not come", id))
		if !open {
			break
		}
		var note struct {
			Offset int   `json:"offset"`
			Bytes  []int `json:"bytes"`
		}
		if err := json.Unmarshal(n.Payload, &note); err != nil {
			t.Fatalf("notification %s: %v", n.Payload, err)
		}
		if note.Offset != len(data) {
			t.Fatalf("notification at offset %d after %d bytes", note.Offset, len(data))
		}
		if len(note.Bytes) == 0 {
			break
		}
		for _, b := range note.Bytes {
			data = append(data, byte(b))
		}
	}
	if env, err := sub.Unsubscribe(ctx); err != nil || !env.OK() {
		t.Errorf("UNSUBSCRIBE: %v %+v", err, env)
	}
	return data
}
