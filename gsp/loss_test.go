package gsp_test

import (
	"encoding/binary"
	"testing"
	"time"

	"senseboard"
	"senseboard/content"
	"senseboard/gsp/gspwire"
	"senseboard/profile"
	"senseboard/resource"
	"senseboard/senseboardtest"
)

// gattStream is what a central got of one stream over the GSP service:
// the timestamps of the notifications whose first part (DATA) arrived and
// the bytes that arrived of each, the device's subscription behind it, and
// what the device produced for it.
type gattStream struct {
	path     string
	stamps   []uint32
	sizes    []int
	sub      *resource.Subscription
	produced *senseboardtest.Sub
}

// accounted returns how many notifications the device produced for the
// stream since its first arrived (a reference subscriber got them at the
// same device time), and how many of them arrived whole (every part) or
// were dropped.
func (s *gattStream) accounted(t *testing.T) (produced, arrivedOrDropped int) {
	t.Helper()
	if len(s.stamps) == 0 {
		t.Fatalf("%s: nothing arrived", s.path)
	}
	size := map[uint32]int{}
	for _, c := range s.produced.Contents() {
		b, err := content.Append(nil, c)
		if err != nil {
			t.Fatal(err)
		}
		if stamp := binary.LittleEndian.Uint32(b); stamp >= s.stamps[0] {
			produced++
			size[stamp] = len(b)
		}
	}
	whole := 0
	for i, stamp := range s.stamps {
		if s.sizes[i] == size[stamp] {
			whole++
		}
	}
	return produced, whole + int(s.sub.Dropped())
}

// gattRun is what streamOverGATT saw: the streams, the most notifications
// (parts) that waited for the air after any step, and how many wait at the
// end.
type gattRun struct {
	streams       []*gattStream
	most, waiting int
}

// streamOverGATT subscribes a central to paths over the GSP service of a
// device with prof (references 1, 2, ...) and lets time run for dur in
// steps of 10 ms; a central that reads takes its notifications after every
// step, one that does not only at the end.
func streamOverGATT(t *testing.T, prof *profile.Profile, dur time.Duration, reads bool, paths ...string) gattRun {
	t.Helper()
	d := senseboardtest.New(t, senseboard.Config{Profile: prof})
	p := connectGATT(t, d, gspwire.DefaultMTU)
	streams := make([]*gattStream, len(paths))
	for i, path := range paths {
		s := &gattStream{path: path, produced: d.SubscribeAll(path)}
		streams[i] = s
		if n := p.command(gspwire.Command{Code: gspwire.Subscribe, Ref: uint8(i + 1), Path: path}); status(n) != 200 {
			t.Fatalf("SUBSCRIBE %s: %d", path, status(n))
		}
		topic, err := d.Device.Core.TopicOf(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, sub := range topic.Subscriptions() {
			if sub.Client != s.produced.Client {
				s.sub = sub
			}
		}
		if s.sub == nil {
			t.Fatalf("%s: the GSP service has no subscription", path)
		}
	}
	// A notification's timestamp is the first 4 bytes of its DATA; the
	// parts that follow on its reference complete it.
	take := func(n []byte) {
		if n[1] < 1 || int(n[1]) > len(streams) {
			return
		}
		s := streams[n[1]-1]
		switch {
		case n[0] == gspwire.Data:
			s.stamps = append(s.stamps, binary.LittleEndian.Uint32(n[2:]))
			s.sizes = append(s.sizes, len(n)-2)
		case len(s.sizes) > 0:
			s.sizes[len(s.sizes)-1] += len(n) - 2
		}
	}
	for _, n := range p.held {
		take(n)
	}
	p.held = nil
	run := gattRun{streams: streams}
	for range int(dur / (10 * time.Millisecond)) {
		d.Advance(10 * time.Millisecond)
		run.most = max(run.most, p.rc.Waiting())
		for reads && p.in.arrived(p.rc) {
			n, _ := p.in.next(p.rc)
			take(n.Data)
		}
	}
	for p.in.arrived(p.rc) {
		n, _ := p.in.next(p.rc)
		take(n.Data)
	}
	run.waiting = p.rc.Waiting()
	return run
}

// The ECG front end holds two notifications (its 32-sample FIFO): over the
// device's GSP service, as over the radio link (radio's
// TestAirtimeTopicLimit), at most two ECG notifications wait for the air,
// though the transmit queue has room for more, and the next is lost and
// counted in the subscription's Dropped.
func TestECGOverGATTWaitsInTheFrontEnd(t *testing.T) {
	t.Parallel()
	prof := profile.Default()
	// 20 packets a second carry fewer than ECG at 512 Hz sends (32).
	prof.BLE.Airtime = profile.Airtime{Enabled: true, PacketsPerEvent: 1, DataLength: 251, TXQueue: 20}
	run := streamOverGATT(t, prof, 2*time.Second, true, "/Meas/ECG/512")
	ecg := run.streams[0]
	if run.most != 2 {
		t.Errorf("at most %d notifications waited for the air; want 2, the front end's buffer", run.most)
	}
	produced, accounted := ecg.accounted(t)
	t.Logf("%d produced, %d arrived, %d dropped, %d waiting", produced, len(ecg.stamps), ecg.sub.Dropped(), run.waiting)
	if ecg.sub.Dropped() == 0 || produced != accounted+run.waiting {
		t.Errorf("%d produced, %d arrived, %d dropped, %d wait for the air; want some dropped, and all accounted for",
			produced, len(ecg.stamps), ecg.sub.Dropped(), run.waiting)
	}
}

// More than the air carries over the GSP service loses whole notifications,
// each counted in its subscription's Dropped, and so does a central that
// stops reading (here with the throughput model off, so that more reaches
// it than it holds): what the device produced arrived whole, was dropped
// or still waits for the air. A notification of IMU9 is two parts: one
// whose first part the central took and whose second it had no room for
// is lost, and counted.
func TestOverloadOverGATTCountsWhatIsLost(t *testing.T) {
	t.Parallel()
	for _, reads := range []bool{true, false} {
		prof := profile.Default()
		prof.BLE.Airtime.Enabled = reads
		run := streamOverGATT(t, prof, 2*time.Second, reads, "/Meas/ECG/512", "/Meas/IMU9/833", "/Meas/Acc/1666")
		dropped, unaccounted := uint64(0), 0
		for _, s := range run.streams {
			produced, accounted := s.accounted(t)
			dropped += s.sub.Dropped()
			unaccounted += produced - accounted
			t.Logf("reads %v: %s: %d produced, %d arrived, %d dropped", reads, s.path, produced, len(s.stamps), s.sub.Dropped())
		}
		// What waits is counted in parts, a notification of IMU9 is two.
		if dropped == 0 || unaccounted < 0 || unaccounted > run.waiting {
			t.Errorf("reads %v: %d dropped, %d unaccounted for, %d parts wait for the air; want some dropped and the rest waiting",
				reads, dropped, unaccounted, run.waiting)
		}
	}
}
