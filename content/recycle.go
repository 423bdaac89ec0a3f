package content

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"senseboard/sensor"
)

// A stream's notifications are many and short-lived: a streaming device
// publishes a score of them a second, each kept only until its
// subscribers' sessions have encoded it. NewMotionData and NewECGData take
// them from pools, and they go back once every holder has released them
// (resource.Recyclable): their maker, once it has published them, and each
// queue that took them, once its consumer is done. A notification that a
// holder keeps (a sink that is not a queue) or never releases (a consumer
// that does not say when it is done) is left to the collector, as one not
// made by these functions always is.
//
// What a notification keeps to go back, its holds and its pool, is one
// word in the room its alignment leaves after its timestamp: it costs a
// notification that never goes back no memory.

// A notification's refs word: its pool in the top bits (0: none, made
// otherwise), whether it is kept, and its holders in the rest.
const (
	poolShift = 28
	// kept marks a notification that is kept: it never goes back, and
	// releases leave it as it is. However many sinks keep it, it is one
	// bit, so that keeping never reaches its pool.
	kept      = 1 << (poolShift - 1)
	holdsMask = kept - 1
)

// noCopy makes go vet (copylocks) report a copy of the pooled
// notification it is in: a copy's Release would give back what its pool
// did not make. It takes no room.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// The pools, as a notification's refs word names them.
const (
	noPool = iota
	motionPool8
	motionPool16
	motionPool24
	ecgPool
)

var pools = [...]sync.Pool{
	motionPool8:  {New: func() any { return new(motionData8) }},
	motionPool16: {New: func() any { return new(motionData16) }},
	motionPool24: {New: func() any { return new(motionData24) }},
	ecgPool:      {New: func() any { return new(ECGData) }},
}

func hold(refs *uint32) {
	if atomic.LoadUint32(refs)>>poolShift != noPool {
		atomic.AddUint32(refs, 1)
	}
}

func keep(refs *uint32) {
	if atomic.LoadUint32(refs)>>poolShift != noPool {
		atomic.OrUint32(refs, kept)
	}
}

// release ends a hold and reports the pool the notification goes back to,
// noPool while it is held, once it is kept, or when it has none. A release
// of a pooled notification that no one holds (one more than its holds, while
// it waits in its pool) does nothing: its word stays as its pool left it.
// A release after it was made again would take a hold off its next owner;
// nothing here can tell that from a hold of its own.
func release(refs *uint32) int {
	for {
		r := atomic.LoadUint32(refs)
		if r>>poolShift == noPool || r&kept != 0 {
			return noPool
		}
		if r&holdsMask == 0 {
			return noPool
		}
		if !atomic.CompareAndSwapUint32(refs, r, r-1) {
			continue
		}
		if (r-1)&holdsMask != 0 {
			return noPool
		}
		return int(r >> poolShift)
	}
}

// Hold adds a holder of a notification made by NewMotionData
// (resource.Recyclable); on any other it does nothing.
func (m *MotionData) Hold() { hold(&m.refs) }

// Keep makes a notification made by NewMotionData never reused; its
// releases do nothing from then on.
func (m *MotionData) Keep() { keep(&m.refs) }

// Release ends a hold of a notification made by NewMotionData; the last
// gives it back for reuse, after which its holders must not read it.
func (m *MotionData) Release() {
	// m is the first field of the pool's item it was made in
	// (motionStore), which begins where m does.
	switch p := release(&m.refs); p {
	case motionPool8:
		pools[p].Put((*motionData8)(unsafe.Pointer(m)))
	case motionPool16:
		pools[p].Put((*motionData16)(unsafe.Pointer(m)))
	case motionPool24:
		pools[p].Put((*motionData24)(unsafe.Pointer(m)))
	}
}

// Hold adds a holder of a notification made by NewECGData
// (resource.Recyclable); on any other it does nothing.
func (e *ECGData) Hold() { hold(&e.refs) }

// Keep makes a notification made by NewECGData never reused; its releases
// do nothing from then on.
func (e *ECGData) Keep() { keep(&e.refs) }

// Release ends a hold of a notification made by NewECGData; the last gives
// it back for reuse, after which its holders must not read it.
func (e *ECGData) Release() {
	if p := release(&e.refs); p == ecgPool {
		pools[p].Put(e)
	}
}

// motionStore takes a notification and its arrays' room for size samples
// from a pool, cleared, held by its maker.
func motionStore(size int) (*MotionData, []sensor.XYZ) {
	var m *MotionData
	var store []sensor.XYZ
	var p uint32
	switch {
	case size <= 8:
		w := pools[motionPool8].Get().(*motionData8)
		m, store, p = &w.m, w.store[:], motionPool8
	case size <= 16:
		w := pools[motionPool16].Get().(*motionData16)
		m, store, p = &w.m, w.store[:], motionPool16
	default:
		w := pools[motionPool24].Get().(*motionData24)
		m, store, p = &w.m, w.store[:], motionPool24
	}
	clear(store)
	*m = MotionData{refs: p<<poolShift | 1}
	return m, store
}

// ecgStore takes a notification from its pool, cleared, held by its maker.
func ecgStore() *ECGData {
	e := pools[ecgPool].Get().(*ECGData)
	*e = ECGData{refs: ecgPool<<poolShift | 1}
	return e
}
