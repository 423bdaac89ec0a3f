package world

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"senseboard/noise"
)

// BeatKind is where a beat starts.
type BeatKind uint8

// The beat kinds, after the WFDB annotation codes N, V and A.
const (
	Normal          BeatKind = iota // conducted from the atria: sinus, or atrial fibrillation
	Ventricular                     // premature ventricular beat: wide, no P wave, compensatory pause
	AtrialPremature                 // premature atrial beat: early, abnormal P wave, normal QRS
)

var beatKindNames = [...]string{"normal", "ventricular", "atrial premature"}

func (k BeatKind) String() string {
	if int(k) < len(beatKindNames) {
		return beatKindNames[k]
	}
	return fmt.Sprintf("BeatKind(%d)", uint8(k))
}

// Rhythm is the heart's rhythm at a moment.
type Rhythm uint8

// The rhythms.
const (
	Sinus              Rhythm = iota // healthy sinus rhythm, the rate following activity
	AtrialFibrillation               // no P waves, fibrillatory waves, irregular intervals
	Bradycardia                      // sinus rhythm held at a slow rate
	Tachycardia                      // a paroxysmal tachycardia held at a fast rate
)

var rhythmNames = [...]string{"sinus", "afib", "bradycardia", "tachycardia"}

func (r Rhythm) String() string {
	if int(r) < len(rhythmNames) {
		return rhythmNames[r]
	}
	return fmt.Sprintf("Rhythm(%d)", uint8(r))
}

// Heart is a scenario's heart beyond a healthy rhythm: ectopic beats at
// rates, and episodes of other rhythms. The zero Heart is a healthy sinus
// rhythm.
type Heart struct {
	PVC      float64   // premature ventricular beats per minute during sinus rhythm, 0..30
	PAC      float64   // premature atrial beats per minute during sinus rhythm, 0..30
	Episodes []Episode // sorted by At, not overlapping
}

// Episode is a stretch of another rhythm.
type Episode struct {
	At        time.Duration // since the scenario started
	Duration  time.Duration
	Rhythm    Rhythm
	HeartRate float64 // mean ventricular rate, bpm
}

// Default episode rates, bpm.
const (
	defaultAFRate    = 110
	defaultBradyRate = 40
	defaultTachyRate = 160
)

// Healthy reports whether h is a healthy sinus rhythm: no ectopic beats, no
// episodes.
func (h *Heart) Healthy() bool { return h.PVC == 0 && h.PAC == 0 && len(h.Episodes) == 0 }

// episodeAt returns the episode at scenario time t.
func (h *Heart) episodeAt(t time.Duration) (Episode, bool) {
	for _, e := range h.Episodes {
		if t >= e.At && t < e.At+e.Duration {
			return e, true
		}
		if e.At > t {
			break
		}
	}
	return Episode{}, false
}

// heart file format:
//
//	heart:
//	  pvc: 2          # premature ventricular beats per minute
//	  pac: 1          # premature atrial beats per minute
//	  episodes:
//	    - at: 2m
//	      afib: 90s
//	      heartRate: 110
//	    - at: 5m
//	      tachycardia: 1m
//	    - at: 8m
//	      bradycardia: 1m
//	      heartRate: 38
func parseHeart(n *yaml.Node) (Heart, error) {
	var h Heart
	m, keys, err := mapping(n)
	if err != nil {
		return h, err
	}
	rate := func(k string) (float64, error) {
		v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(m[k].Value), "/min"), 64)
		if err != nil || v < 0 || v > 30 {
			return 0, fmt.Errorf("%s %q: beats per minute, 0..30", k, m[k].Value)
		}
		return v, nil
	}
	for _, k := range keys {
		switch k {
		case "pvc":
			if h.PVC, err = rate(k); err != nil {
				return h, err
			}
		case "pac":
			if h.PAC, err = rate(k); err != nil {
				return h, err
			}
		case "episodes":
			if m[k].Kind != yaml.SequenceNode {
				return h, errors.New("episodes: want a list")
			}
			for i, en := range m[k].Content {
				e, err := parseEpisode(en)
				if err != nil {
					return h, fmt.Errorf("episodes[%d] (line %d): %w", i, en.Line, err)
				}
				h.Episodes = append(h.Episodes, e)
			}
		default:
			return h, fmt.Errorf("unknown key %s; heart has pvc, pac and episodes", k)
		}
	}
	for i := 1; i < len(h.Episodes); i++ {
		p, e := h.Episodes[i-1], h.Episodes[i]
		if e.At < p.At+p.Duration {
			return h, fmt.Errorf("episodes[%d] at %v starts before episodes[%d] ends (%v); list episodes in order, without overlap", i, e.At, i-1, p.At+p.Duration)
		}
	}
	return h, nil
}

func parseEpisode(n *yaml.Node) (Episode, error) {
	var e Episode
	m, keys, err := mapping(n)
	if err != nil {
		return e, err
	}
	at, ok := m["at"]
	if !ok {
		return e, errors.New("an episode has at: the time since the scenario started")
	}
	if e.At, err = parseDuration(at.Value); err != nil || e.At < 0 {
		return e, fmt.Errorf("at %q: a duration such as 6m10s", at.Value)
	}
	kinds := 0
	for _, k := range keys {
		v := m[k]
		switch k {
		case "at":
		case "afib", "bradycardia", "tachycardia":
			kinds++
			e.Rhythm = map[string]Rhythm{"afib": AtrialFibrillation, "bradycardia": Bradycardia, "tachycardia": Tachycardia}[k]
			if e.Duration, err = parseDuration(v.Value); err != nil || e.Duration <= 0 || e.Duration > MaxScenarioLength {
				return e, fmt.Errorf("%s %q: a positive duration such as 90s", k, v.Value)
			}
		case "heartRate":
			if e.HeartRate, err = strconv.ParseFloat(v.Value, 64); err != nil {
				return e, fmt.Errorf("heartRate %q is not a number", v.Value)
			}
			if err := checkHR(e.HeartRate); err != nil {
				return e, fmt.Errorf("heartRate: %w", err)
			}
		default:
			return e, fmt.Errorf("unknown key %s; an episode has at, one of afib, bradycardia, tachycardia with a duration, and optionally heartRate", k)
		}
	}
	if kinds != 1 {
		return e, errors.New("an episode has at and exactly one of afib, bradycardia, tachycardia")
	}
	if e.HeartRate == 0 {
		e.HeartRate = map[Rhythm]float64{AtrialFibrillation: defaultAFRate, Bradycardia: defaultBradyRate, Tachycardia: defaultTachyRate}[e.Rhythm]
	}
	return e, nil
}

// noise streams of the heart
const (
	streamEctopic uint64 = iota + 20
	streamCoupling
	streamAF
)

// nextBeat returns the beat after last, for a wearer whose scenario has a
// heart beyond a healthy rhythm; sinusRR is the healthy rhythm's interval
// (s) at rate hr (bpm).
func (w *Wearer) nextBeat(last Beat, sinusRR, hr float64) Beat {
	h := &w.sc.Heart
	rel := last.At - w.origin
	st := rel
	if w.sc.Loop && w.length > 0 {
		st = rel % w.length
	}
	n := uint64(last.N + 1)
	b := Beat{N: last.N + 1}
	ep, inEp := h.episodeAt(st)
	switch {
	case inEp && ep.Rhythm == AtrialFibrillation:
		// irregularly irregular: independent intervals, log-normal with a
		// coefficient of variation of about 20%
		mean := 60 / ep.HeartRate
		rr := mean * math.Exp(0.2*noise.Gauss(noise.Key(w.seed, streamAF, n))-0.02)
		b.Rhythm = AtrialFibrillation
		return w.place(b, last, math.Max(rr, 0.3))
	case inEp:
		sinusRR *= hr / ep.HeartRate // the episode's rate, with the same variability
		b.Rhythm = ep.Rhythm
	}
	// a pending sinus beat after an ectopic one
	if last.Kind == Ventricular {
		// full compensatory pause: the sinus node kept its rhythm, so the
		// next beat comes two intervals after the beat before the PVC
		b.Rhythm = last.Rhythm
		return w.place(b, last, math.Max(2*last.sinusRR-last.RR.Seconds(), 0.3))
	}
	if !inEp || ep.Rhythm != Tachycardia {
		u := noise.Uniform(noise.Key(w.seed, streamEctopic, n))
		pv, pa := h.PVC*sinusRR/60, h.PAC*sinusRR/60 // per beat
		c := noise.Uniform(noise.Key(w.seed, streamCoupling, n))
		switch {
		case last.Kind == Normal && u < pv:
			b.Kind = Ventricular
			b.sinusRR = sinusRR
			b.Rhythm = last.Rhythm
			return w.place(b, last, sinusRR*(0.55+0.1*c))
		case last.Kind == Normal && u < pv+pa:
			// the atrial focus resets the sinus node: the next beat comes one
			// interval later (no compensatory pause)
			b.Kind = AtrialPremature
			b.Rhythm = last.Rhythm
			return w.place(b, last, sinusRR*(0.65+0.1*c))
		}
	}
	return w.place(b, last, sinusRR)
}

// place puts b rr seconds after last.
func (w *Wearer) place(b, last Beat, rr float64) Beat {
	d := time.Duration(rr * float64(time.Second))
	b.At, b.RR = last.At+d, d
	return b
}

// RhythmAt returns the heart's rhythm at clock reading t.
func (w *Wearer) RhythmAt(t time.Duration) Rhythm {
	rel := t - w.origin
	if w.sc.Loop && w.length > 0 {
		rel %= w.length
	}
	if e, ok := w.sc.Heart.episodeAt(rel); ok {
		return e.Rhythm
	}
	return Sinus
}
