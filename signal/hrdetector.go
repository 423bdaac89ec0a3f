package signal

// HRDetector finds heartbeats in an ECG of one or two leads as the device's
// heart rate does: each lead through the front end's filters (a 0.5 Hz
// high-pass and a 40 Hz low-pass, second-order Butterworth), then a
// QRSDetector on one lead, or a TwoLeadDetector on two (which adds up to
// 1.5 s to a beat's delay). Feed does not allocate when Pop takes the
// beats after each Feed.
type HRDetector struct {
	front [2]Cascade // each lead's filters
	one   *QRSDetector
	two   *TwoLeadDetector
}

// NewHRDetector returns a detector for an ECG of leads leads (1 or 2;
// any other number counts as 1) sampled at fs Hz (at least 100).
func NewHRDetector(fs float64, leads int) *HRDetector {
	d := &HRDetector{}
	n := 1
	if leads == 2 {
		n = 2
		d.two = NewTwoLeadDetector(fs)
	} else {
		d.one = NewQRSDetector(fs)
	}
	for i := range n {
		hp, _ := Butterworth(HighPass, 2, 0.5, fs)
		lp, _ := Butterworth(LowPass, 2, 40, fs)
		d.front[i] = append(hp, lp...)
	}
	return d
}

// Leads returns how many leads the detector takes.
func (d *HRDetector) Leads() int {
	if d.two != nil {
		return 2
	}
	return 1
}

// Feed processes one sample of each lead, taken at the same time, as the
// electrodes give it (before the front end's filters); a detector of one
// lead ignores x1. Beats found are returned by Pop.
func (d *HRDetector) Feed(x0, x1 float64) {
	if d.two != nil {
		d.two.Feed(d.front[0].Step(x0), d.front[1].Step(x1))
		return
	}
	d.one.Feed(d.front[0].Step(x0))
}

// Pop returns the sample index (counted from the first sample fed) of the
// next beat found, in order.
func (d *HRDetector) Pop() (int64, bool) {
	if d.two != nil {
		return d.two.Pop()
	}
	return d.one.Pop()
}

// Flush ends the stream: every beat still waiting is decided.
func (d *HRDetector) Flush() {
	if d.two != nil {
		d.two.Flush()
		return
	}
	d.one.Flush()
}
