package logbook

import "senseboard/resource"

// HoldWrites makes each write of m's log call hold first, on the goroutine
// that writes: a disk that stalls the logger for as long as hold does.
func HoldWrites(m *Module, hold func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.beforeWrite = hold
}

// StopAfter makes m stop logging, as PUT /Mem/DataLogger/State 2 does,
// once hold is closed, on the app's goroutine, which it holds up until
// then: the stop comes after the notifications that arrive meanwhile.
// started is closed once the app is held up; the stop's answer comes on
// the channel returned.
func StopAfter(m *Module, started chan<- struct{}, hold <-chan struct{}) <-chan resource.Response {
	done := make(chan resource.Response, 1)
	m.mu.Lock()
	ctx := m.ctx
	m.mu.Unlock()
	ctx.Run(func() {
		close(started)
		<-hold
		done <- m.stopRequested()
	})
	return done
}
