package meas

import (
	"senseboard/content"
	"sync"
	"sync/atomic"
	"time"

	"senseboard/device"
	"senseboard/resource"
	"senseboard/sensor"
	"senseboard/signal"
)

// Heart-rate limits: RR intervals outside Min..Max ms are not valid beats.
const (
	HRMin      = 200
	HRMax      = 2000
	HRAccuracy = 5
	// HRRate is the rate the heart-rate measurement samples the ECG at,
	// whatever rate an ECG subscription uses, as the front end's own R-to-R
	// detector does.
	HRRate = 256
	// hrAverage is how many intervals the average spans.
	hrAverage = 8
	// hrBatch is how many samples the detector takes at a time: a quarter
	// of a second, which adds at most that to the detector's own delay of a
	// beat's notification.
	hrBatch = HRRate / 4
)

// HR serves /Meas/HR: a QRS detector on the device's own ECG, behind the
// front end's filters (signal.HRDetector). A source that offers two leads
// (a replayed record of two, when the replay offers both:
// sensor.TwoLeadSource) gives beats from both, through the two-lead
// detector, each lead through its own filters.
type HR struct {
	d *device.Core

	mu     sync.Mutex
	src    sensor.ECGSource
	topic  *resource.Topic
	st     *hrStream
	lastRR atomic.Int64 // ns, for the front end's RTOR register
	first  float32      // the implausible first value of each subscription (SetFirst), 0 for none
	seen   map[*resource.Subscription]bool
}

// SetFirst makes the first notification of each subscription from now
// carry the implausible average bpm, as some firmware releases did; 0
// ends it.
func (p *HR) SetFirst(bpm float32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.first, p.seen = bpm, nil
	if bpm > 0 {
		p.seen = map[*resource.Subscription]bool{}
		if p.topic != nil { // those there now had their first already
			for _, s := range p.topic.Subscriptions() {
				p.seen[s] = true
			}
		}
	}
}

// publish notifies a beat; with SetFirst on, a subscription's first
// notification carries the implausible value. p.mu is held.
func (p *HR) publish(average float32, rr uint16) {
	if p.first == 0 {
		p.topic.Publish(content.NewHRData(average, rr))
		return
	}
	c := content.NewHRData(average, rr)
	for _, s := range p.topic.Subscriptions() {
		if p.seen[s] {
			s.Notify(c)
			continue
		}
		if len(p.seen) > 1024 {
			for o := range p.seen {
				if !o.Active() {
					delete(p.seen, o)
				}
			}
		}
		p.seen[s] = true
		s.Notify(content.NewHRData(p.first, rr))
	}
}

type hrStream struct {
	stream
	p     *HR
	det   *signal.HRDetector
	buf   []float64 // the first lead's batch
	buf1  []float64 // the second lead's, on two leads
	lastR int64
	rr    []float64 // recent valid intervals, ms
}

// detect starts a detector of two leads, or of one.
func (st *hrStream) detect(two bool) {
	leads := 1
	if two {
		leads = 2
		if st.buf1 == nil {
			st.buf1 = make([]float64, hrBatch)
		}
	}
	st.det, st.lastR = signal.NewHRDetector(HRRate, leads), -1
}

// NewHR returns the heart-rate provider reading src.
func NewHR(src sensor.ECGSource) *HR { return &HR{src: src} }

// SetSource changes the source, as a replay does.
func (p *HR) SetSource(src sensor.ECGSource) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.src = src
}

// LastRR returns the latest RR interval, or 0.
func (p *HR) LastRR() time.Duration { return time.Duration(p.lastRR.Load()) }

// Register installs the heart-rate resources.
func (p *HR) Register(d *device.Core) error {
	p.d = d
	d.HandleFunc("/Meas/HR/Info", resource.Get, func(*resource.Request) resource.Response {
		return resource.OK(&content.HRInfo{Min: HRMin, Max: HRMax, Accuracy: HRAccuracy})
	})
	d.HandleSource("/Meas/HR", hrSource{p})
	return nil
}

type hrSource struct{ p *HR }

// Subscribe starts the measurement with the first subscriber. It answers
// 204 until the first interval is known.
func (s hrSource) Subscribe(t *resource.Topic, _ *resource.Request) resource.Response {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.topic = t
	if p.st == nil {
		st := &hrStream{p: p, buf: make([]float64, hrBatch)}
		st.detect(sensor.SecondLead(p.src) != nil)
		st.stream = stream{clk: p.d.Clock(), rate: HRRate, batch: hrBatch, mu: &p.mu, batcher: st}
		p.st = st
		st.start()
	}
	if len(p.st.rr) == 0 {
		return resource.Response{Status: resource.StatusNoContent}
	}
	return resource.OK(nil)
}

func (s hrSource) Unsubscribed(t *resource.Topic) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.Subscribers() == 0 && p.topic == t {
		p.topic = nil
		if p.st != nil {
			p.st.stop()
			p.st = nil
		}
	}
}

func (st *hrStream) fireBatch(at time.Duration, n int) { st.p.fire(st, at, n) }

// fire feeds a batch to the detector and notifies each beat; p.mu is held.
// A source that changed its number of leads (SetSource, or a replay's
// SetHRLeads) starts a new detector. The source is asked its leads once a
// batch: the batch reads and detects the leads of that one answer, even
// when another goroutine changes them meanwhile.
func (p *HR) fire(st *hrStream, at time.Duration, n int) {
	dt := st.period()
	two := sensor.SecondLead(p.src)
	if (two != nil) != (st.det.Leads() == 2) {
		st.detect(two != nil)
	}
	var lead1 []float64 // nil on one lead
	if two != nil {
		lead1 = st.buf1[:n]
		two.FillTwoLeads(st.buf[:n], lead1, at, dt)
	} else {
		p.src.FillECG(st.buf[:n], at, dt)
	}
	contact := p.src.Contact(at)
	for i, x := range st.buf[:n] {
		x1 := 0.0
		if lead1 != nil {
			x1 = lead1[i]
		}
		st.det.Feed(x, x1)
		for {
			r, ok := st.det.Pop()
			if !ok {
				break
			}
			prev := st.lastR
			st.lastR = r
			if prev < 0 || !contact {
				continue
			}
			rr := float64(r-prev) * 1000 / HRRate
			if rr < HRMin || rr > HRMax {
				continue // not a valid beat: an interval across a gap
			}
			if len(st.rr) == hrAverage {
				copy(st.rr, st.rr[1:])
				st.rr = st.rr[:hrAverage-1]
			}
			st.rr = append(st.rr, rr)
			sum := 0.0
			for _, v := range st.rr {
				sum += v
			}
			p.lastRR.Store(int64(rr * float64(time.Millisecond)))
			if p.topic != nil {
				p.publish(float32(60000/(sum/float64(len(st.rr)))), uint16(rr+0.5))
			}
		}
	}
}
