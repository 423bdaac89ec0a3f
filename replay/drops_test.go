package replay

import (
	"hash/fnv"
	"math/rand/v2"
	"time"
)

// drop is a simulated signal drop in a corpus record, from from to to: the
// input scaled by gain (an electrode that moved, and the QRS complexes
// shrank), or, with gain 0, held flat at its value when the drop began (an
// electrode off). The records have few drops of their own, so the rules
// that recover from one are judged on these.
type drop struct {
	from, to time.Duration
	gain     float64
}

// dropsOf returns the drops of a record named name (its database's
// directory and record name), of the given length, at places drawn from
// seed and the name: after a stretch of 20 to 100 s from 10 s on, and then
// of 30 to 150 s after each drop, a drop of 20 to 90 s to a gain of 0.05 to
// 0.35, or one time in four a flat stretch of 0.5 to 8 s. The same seed
// and name give the same drops, on every lead and at every rate.
func dropsOf(seed uint64, name string, length time.Duration) []drop {
	h := fnv.New64a()
	h.Write([]byte(name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	u := func(lo, hi float64) time.Duration {
		return time.Duration((lo + rng.Float64()*(hi-lo)) * float64(time.Second))
	}
	var out []drop
	for t := 10*time.Second + u(20, 100); t < length; {
		d := drop{from: t}
		if rng.IntN(4) == 0 {
			d.to = t + u(0.5, 8)
		} else {
			d.to, d.gain = t+u(20, 90), 0.05+0.3*rng.Float64()
		}
		out = append(out, d)
		t = d.to + u(30, 150)
	}
	return out
}

// flat returns the flat stretches among drops, where no beat can be found:
// their beats and detections are not scored.
func flat(drops []drop) []span {
	var out []span
	for _, d := range drops {
		if d.gain == 0 {
			out = append(out, span{d.from, d.to})
		}
	}
	return out
}

// rampTime is how long an amplitude drop takes to fall and to rise again.
const rampTime = 500 * time.Millisecond

// dropState applies drops to a stream of samples in time order.
type dropState struct {
	k    int     // the drop now or next
	in   bool    // in drop k's flat stretch, holding held
	held float64 // the input when the flat stretch began
}

// apply returns the input x at time t as drops change it.
func (s *dropState) apply(drops []drop, t time.Duration, x float64) float64 {
	for s.k < len(drops) && t >= drops[s.k].to {
		s.k++
		s.in = false
	}
	if s.k == len(drops) || t < drops[s.k].from {
		return x
	}
	if d := drops[s.k]; d.gain > 0 {
		// the gain changes over rampTime at either end: a step of the
		// baseline would be a drop's artefact of its own
		ramp := min(float64(t-d.from), float64(d.to-t), float64(rampTime)) / float64(rampTime)
		return x * (1 - (1-d.gain)*ramp)
	}
	if !s.in {
		s.held, s.in = x, true
	}
	return s.held
}
