// Package noise provides counter-based random numbers: a number is a pure
// function of a seed and a key, so a simulation gives the same values
// whatever order it asks for them in, and any sample can be recomputed.
package noise

import "math"

// Mix returns a well-mixed 64-bit value of x (the SplitMix64 finalizer).
func Mix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

// Key combines a seed, a stream number and an index into one key.
func Key(seed, stream, index uint64) uint64 {
	return Mix(seed ^ Mix(stream^Mix(index)))
}

// Stream is the keys of one stream of a seed, for numbers drawn at many
// indexes, such as a sensor's noise at each sample: Key(i) is a pure
// function of the seed, the stream number and i, from one mixing where the
// package's Key takes three. Normal, Uniform and Gauss mix a key again, so
// a number of a Stream has two mixings between its index and its bits.
type Stream uint64

// NewStream returns stream number stream of seed.
func NewStream(seed, stream uint64) Stream { return Stream(Key(seed, stream, math.MaxUint64)) }

// Key returns the key of index i.
func (s Stream) Key(i uint64) uint64 { return Mix(uint64(s) ^ i) }

// Uniform returns a number in [0, 1) for key.
func Uniform(key uint64) float64 {
	return float64(Mix(key)>>11) / (1 << 53)
}

// Gauss returns a standard normal number for key (Box-Muller on two
// uniforms derived from the key).
func Gauss(key uint64) float64 {
	u1 := (float64(Mix(key)>>11) + 0.5) / (1 << 53)
	u2 := float64(Mix(key^0xD1B54A32D192ED03)>>11) / (1 << 53)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// Normal returns an approximately standard normal number for key, from one
// hash: the sum of four 16-bit uniforms, centred and scaled to unit
// variance (Irwin-Hall). Its tails end at about 3.5 standard deviations; it
// is ten times cheaper than Gauss, for per-sample sensor noise.
func Normal(key uint64) float64 {
	h := Mix(key)
	s := float64(h&0xFFFF) + float64(h>>16&0xFFFF) + float64(h>>32&0xFFFF) + float64(h>>48)
	// each uniform is in [0, 65536): mean 32767.5, variance 65536^2/12
	return (s - 4*32767.5) * (math.Sqrt(3) / 65536)
}
