package bridge_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestHeartRateServiceFeed: a device on the movesense profile feeds its
// heart rate service from its heart-rate measurement, as a current sensor
// does: once the phone switches the service's notifications on
// (POST /api/devices/{serial}/hrs), the WebSocket's hrs events carry what
// /Meas/HR measures, the average and the RR interval of each beat, with no
// app posting to /Comm/Ble/HRS.
func TestHeartRateServiceFeed(t *testing.T) {
	t.Parallel() // waits on real time; runs beside the other slow tests
	r := newRig(t, rigConfig{local: []string{"000123"}, profile: "movesense"})
	r.connected("000123")
	conn, _, err := websocket.Dial(r.ctx, "ws"+strings.TrimPrefix(r.srv.URL, "http")+"/api/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	send := func(m string) {
		t.Helper()
		if err := conn.Write(r.ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	// the measurement over the JSON API beside it, to compare
	send(`{"type": "subscribe", "device": "000123", "path": "/Meas/HR", "id": "hr"}`)
	if status, body := r.post("/api/devices/000123/hrs", `{"notifications": true}`); status != 200 {
		t.Fatalf("hrs: %d %s", status, body)
	}
	type beat struct {
		Average float32  `json:"average"`
		RRData  []uint16 `json:"rrData"`
	}
	measured := map[uint16]beat{} // by RR interval
	var events []beat
	matched := 0
	deadline := time.Now().Add(time.Minute) // a guard against hanging, not a bound
	for matched < 4 {
		ctx, cancel := context.WithDeadline(r.ctx, deadline)
		_, b, err := conn.Read(ctx)
		cancel()
		if err != nil {
			t.Fatalf("%d hrs events, %d of them measured by /Meas/HR: %v", len(events), matched, err)
		}
		var m struct {
			Type    string
			Device  any // a serial, or on device events the device's state
			Content json.RawMessage
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		var c beat
		json.Unmarshal(m.Content, &c)
		switch {
		case m.Type == "notification" && len(c.RRData) > 0:
			measured[c.RRData[0]] = c
		case m.Type == "hrs":
			if m.Device != "000123" || len(c.RRData) != 1 || c.Average < 40 || c.Average > 200 {
				t.Fatalf("hrs event %s", b)
			}
			events = append(events, c)
		default:
			continue
		}
		matched = 0
		for _, e := range events {
			if got, ok := measured[e.RRData[0]]; ok && got.Average == e.Average {
				matched++
			}
		}
	}
}
