package air

// Crash ends a link as a program that dies does: without goodbyes.
func Crash(l *Link) {
	l.nc.Close()
	l.Close()
}
