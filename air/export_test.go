package air

import "github.com/nats-io/nats-server/v2/server"

// Crash ends a link as a program that dies does: without goodbyes.
func Crash(l *Link) {
	if nc, _ := l.advertConn(false); nc != l.nc {
		nc.Close()
	}
	l.nc.Close()
	l.Close()
}

// EmbeddedServer is the NATS server that runs in l's program, or nil.
func EmbeddedServer(l *Link) *server.Server {
	if l.local == nil {
		return nil
	}
	l.local.mu.Lock()
	defer l.local.mu.Unlock()
	return l.local.srv
}
