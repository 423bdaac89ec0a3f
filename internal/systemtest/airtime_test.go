package systemtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"senseboard"
	"senseboard/client"
	"senseboard/content"
	"senseboard/internal/await"
	"senseboard/profile"
	"senseboard/provider/meas"
	"senseboard/radio"
	"senseboard/resource"
	"senseboard/senseboardtest"
	"senseboard/transport/serial"
)

var updateDocs = flag.Bool("update", false, "rewrite the BLE throughput table of docs/behaviour.md from the model")

// radioStream is a subscription made over a BLE connection of the device,
// as the radio link's session makes it: its notifications pass the
// throughput model into a queue that the test drains as a transport would.
type radioStream struct {
	conn *radio.Conn
	q    *resource.Queue
	sub  *resource.Subscription
}

func subscribeOverRadio(t testing.TB, d *senseboard.Device, path string) *radioStream {
	t.Helper()
	q := resource.NewQueue(4096)
	rc, err := d.Radio.Connect(radio.NewCentral("C0:00:00:00:00:01", "phone"), q)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Disconnect)
	env, err := d.Do(&resource.Request{Op: resource.Subscribe, Path: path, Client: rc.Client()})
	if err != nil || !env.Status.OK() {
		t.Fatalf("SUBSCRIBE %s over BLE: %v %v", path, env.Status, err)
	}
	subs := rc.Client().Subscriptions()
	if len(subs) != 1 {
		t.Fatalf("%d subscriptions", len(subs))
	}
	return &radioStream{conn: rc, q: q, sub: subs[0]}
}

// gaps counts the notifications missing between timestamps spaced by
// span: what a client counts.
type gaps struct {
	span    float64 // ms between notifications
	last    uint32
	started bool
	missing int
}

func (g *gaps) see(ts uint32) {
	if g.started {
		g.missing += int(math.Round(float64(ts-g.last)/g.span)) - 1
	}
	g.last, g.started = ts, true
}

// A high-rate ECG subscription over BLE loses whole notifications, which
// show as gaps in the timestamps; the same subscription over TCP loses
// nothing.
func TestECGOverBLELosesWhatTCPDoesNot(t *testing.T) {
	t.Parallel()
	const rate, seconds = 512, 20
	period := time.Second * content.ECGArraySize / rate
	want := seconds * rate / content.ECGArraySize

	d, clk := newDevice(t)
	s := subscribeOverRadio(t, d, fmt.Sprintf("/Meas/ECG/%d", rate))
	g := gaps{span: float64(period) / float64(time.Millisecond)}
	got := 0
	for range want {
		clk.Advance(period)
		for _, c := range senseboardtest.Contents(s.q) {
			got++
			g.see(c.(*content.ECGData).Timestamp)
		}
	}
	lost, waiting := int(s.sub.Dropped()), s.conn.Waiting()
	if lost == 0 || got+lost+waiting != want {
		t.Errorf("over BLE: %d notifications arrived, %d were lost and %d wait for the air; want some lost, %d in all", got, lost, waiting, want)
	}
	if g.missing != lost {
		t.Errorf("over BLE: the timestamps show %d missing notifications; %d were lost", g.missing, lost)
	}
	t.Logf("ECG %d Hz over BLE: %d of %d notifications lost", rate, lost, want)
	s.conn.Disconnect()

	// The same subscription over TCP, on the same device: each step's
	// notification is read before time moves on, as a client that keeps
	// up reads it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		(&serial.Server{Device: d.Core}).Serve(ctx, ln)
		close(served)
	}()
	defer func() { cancel(); <-served }()
	c, err := client.Dial(ctx, "tcp://"+ln.Addr().String(), &client.Options{Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub, _, err := c.Subscribe(ctx, fmt.Sprintf("/Meas/ECG/%d", rate))
	if err != nil {
		t.Fatal(err)
	}
	g = gaps{span: g.span}
	for range want {
		clk.Advance(period)
		n, _ := await.Next(t, sub.C(), "the ECG over TCP has not come")
		var e struct{ Timestamp uint32 }
		if err := json.Unmarshal(n.Payload, &e); err != nil {
			t.Fatal(err)
		}
		g.see(e.Timestamp)
	}
	if g.missing != 0 || sub.Dropped() != 0 {
		t.Errorf("over TCP: %d notifications missing by the timestamps, %d dropped", g.missing, sub.Dropped())
	}
}

// throughputRow is one line of the BLE throughput table: a stream at a
// rate over a connection of the default profile, measured through the
// model.
type throughputRow struct {
	stream    string
	path      string
	rate      int
	batch     int // samples per notification
	bytes     int // payload bytes per notification
	perSecond float64
	packets   float64 // link-layer packets per second the stream needs
	delivered float64 // share of the notifications (and so of the samples) that arrived, %
}

// throughputSeconds is how long each stream runs for the table.
const throughputSeconds = 30

// measureThroughput runs a stream over a BLE connection of the default
// profile for throughputSeconds of device time.
func measureThroughput(t *testing.T, stream, path string, rate int) throughputRow {
	t.Helper()
	d, clk := newDevice(t)
	s := subscribeOverRadio(t, d, path)
	r := throughputRow{stream: stream, path: path, rate: rate}
	const step = 10 * time.Millisecond
	notes := 0
	for range throughputSeconds * time.Second / step {
		clk.Advance(step)
		for _, c := range senseboardtest.Contents(s.q) {
			n, size := 0, content.Size(c)
			switch c := c.(type) {
			case *content.MotionData:
				n = len(c.ArrayAcc)
			case *content.ECGData:
				n = len(c.Samples)
			}
			notes++
			r.batch, r.bytes = max(r.batch, n), max(r.bytes, size)
		}
	}
	notes += s.conn.Waiting() // they arrive at the next connection events
	lost := int(s.sub.Dropped())
	r.perSecond = float64(notes+lost) / throughputSeconds
	a := profile.DefaultAirtime
	r.packets = r.perSecond * float64(radio.StreamPackets(&a, r.bytes, radio.DefaultMTU))
	r.delivered = 100 * float64(notes) / float64(notes+lost)
	return r
}

func (r throughputRow) String() string {
	return fmt.Sprintf("| %s | %d | %d | %d | %.1f | %.0f | %.1f |", r.stream, r.rate, r.batch, r.bytes, r.perSecond, r.packets, r.delivered)
}

// throughputTable measures every stream at every rate.
func throughputTable(t *testing.T) string {
	var b strings.Builder
	fmt.Fprintln(&b, "| Stream | Rate (Hz) | Samples per notification | Bytes per notification | Notifications/s | Packets/s needed | Samples delivered (%) |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|")
	for _, rate := range meas.ECGRates {
		fmt.Fprintln(&b, measureThroughput(t, "ECG", fmt.Sprintf("/Meas/ECG/%d", rate), int(rate)))
	}
	for _, st := range []struct{ name, path string }{{"Acc, Gyro or Magn", "/Meas/Acc/%d"}, {"IMU6", "/Meas/IMU6/%d"}, {"IMU9", "/Meas/IMU9/%d"}} {
		for _, rate := range meas.SampleRates {
			fmt.Fprintln(&b, measureThroughput(t, st.name, fmt.Sprintf(st.path, rate), int(rate)))
		}
	}
	return b.String()
}

// The figures of docs/behaviour.md's BLE throughput table are the model's:
// each stream at each rate runs over a connection of the default profile,
// and the table must say what arrived. go test -run
// TestBLEThroughputTable -update ./internal/systemtest rewrites the table.
func TestBLEThroughputTable(t *testing.T) {
	if testing.Short() {
		t.Skip("measures every stream at every rate")
	}
	path := filepath.Join("..", "..", "docs", "behaviour.md")
	const begin, end = "<!-- BLE throughput table: go test -run TestBLEThroughputTable -update ./internal/systemtest -->\n", "<!-- end of table -->"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("%s has no table between %q and %q", path, begin, end)
	}
	table := throughputTable(t)
	if *updateDocs {
		out := append(append(append([]byte(nil), doc[:i+len(begin)]...), table...), doc[j:]...)
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := string(doc[i+len(begin) : j]); got != table {
		t.Errorf("%s's BLE throughput table is not the model's; run go test -run TestBLEThroughputTable -update ./internal/systemtest\nthe model's:\n%s", path, table)
	}
}
