package serial

import (
	"errors"
	"strings"
	"testing"
)

// TestProgramLimitCountsKinds: a program's limit counts connections of
// every kind together, and its refusal says how many of each it holds and
// which flag raises it; a connection counted out makes room.
func TestProgramLimitCountsKinds(t *testing.T) {
	l := NewConnLimit(3)
	for _, k := range []ConnKind{TCPConn, StreamConn, StreamConn} {
		if !l.take(k) {
			t.Fatalf("no room for kind %d under the limit", k)
		}
	}
	if l.take(TCPConn) || l.take(StreamConn) {
		t.Fatal("room over the limit")
	}
	err := programFull(l)
	if !errors.Is(err, ErrTooManyConns) || !strings.Contains(err.Error(), "serves 3 connections at once") ||
		!strings.Contains(err.Error(), "(TCP connections 1, streams of the radio link 2)") || !strings.Contains(err.Error(), "--max-conns") {
		t.Errorf("refusal: %v", err)
	}
	l.put(StreamConn)
	if !l.take(TCPConn) || l.Count(TCPConn) != 2 || l.Count(StreamConn) != 1 {
		t.Errorf("after one stream out and a TCP connection in: TCP %d, streams %d", l.Count(TCPConn), l.Count(StreamConn))
	}
	var none *ConnLimit
	if !none.take(TCPConn) || none.Count(TCPConn) != 0 {
		t.Error("no limit refuses or counts")
	}
	none.put(TCPConn)
	unbounded := NewConnLimit(0)
	for range 5 {
		if !unbounded.take(StreamConn) {
			t.Fatal("a limit of 0 refuses")
		}
	}
	if unbounded.Count(StreamConn) != 5 {
		t.Errorf("a limit of 0 counts %d", unbounded.Count(StreamConn))
	}
}

// TestProgramMaxConns: the default program limit grows with the fleet.
func TestProgramMaxConns(t *testing.T) {
	for _, c := range []struct{ devices, want int }{{1, 1024}, {256, 1024}, {257, 1028}, {2000, 8000}, {5000, 20000}} {
		if got := ProgramMaxConns(c.devices); got != c.want {
			t.Errorf("ProgramMaxConns(%d) = %d, want %d", c.devices, got, c.want)
		}
	}
}
