package logbook

// HoldWrites makes each write of m's log call hold first, on the goroutine
// that writes: a disk that stalls the logger for as long as hold does.
func HoldWrites(m *Module, hold func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.beforeWrite = hold
}
