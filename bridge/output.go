package bridge

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"senseboard/phone"
)

// outputLine is a line of the OUTPUT stream:
//
//	ID:<id> <uri> OUTPUT: <json>
//
// where the JSON is a notification's content, the envelope of the
// subscription's answer, or {"ended": "<reason>"} when the device ended it.
func outputLine(id ID, uri string, body []byte) []byte {
	b := make([]byte, 0, len(id)+len(uri)+len(body)+16)
	b = append(b, "ID:"...)
	b = append(b, id...)
	b = append(b, ' ')
	b = append(b, uri...)
	b = append(b, " OUTPUT: "...)
	b = append(b, body...)
	return append(b, '\n')
}

// output streams subscriptions as text: GET /api/output?path=P[&path=Q...]
// [&id=I...][&device=SERIAL]. Each path is a subscription whose id is the
// id given in the same position, or the path. The stream ends when every
// subscription has ended or the client goes away.
func (s *Server) output(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k := range q {
		if k != "path" && k != "id" && k != "device" && k != "token" {
			writeError(w, http.StatusBadRequest, fmt.Errorf("%w: unknown parameter %q; the stream takes path, id, device and token", ErrBadMessage, k))
			return
		}
	}
	paths, ids := q["path"], q["id"]
	if len(paths) > MaxOutputPaths {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%w: %d paths; one stream carries at most %d", ErrBadMessage, len(paths), MaxOutputPaths))
		return
	}
	if len(q["device"]) > 1 {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%w: %d devices; one stream names at most one device", ErrBadMessage, len(q["device"])))
		return
	}
	if len(paths) == 0 {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%w: give one or more path=/Meas/HR (and device=<serial> when several devices are connected)", ErrBadMessage))
		return
	}
	if len(ids) > len(paths) {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%w: %d ids for %d paths", ErrBadMessage, len(ids), len(paths)))
		return
	}
	// The stream lasts as long as its subscriptions: it lifts the
	// server's read and write timeouts, and bounds each write instead.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	rc.SetWriteDeadline(time.Time{})
	ctx := r.Context()
	out := newOutbox()
	var subs []*phone.Sub
	defer func() {
		uctx, cancel := context.WithTimeout(context.Background(), s.Phone.Timeout())
		defer cancel()
		for _, sub := range subs {
			sub.Unsubscribe(uctx)
		}
	}()
	var head []byte
	ended := make(chan struct{}, len(paths))
	seen := map[ID]bool{}
	for i, p := range paths {
		id := ID(p)
		if i < len(ids) {
			id = ID(ids[i])
		}
		if seen[id] {
			writeError(w, http.StatusBadRequest, fmt.Errorf("%w: id %q is given to two subscriptions", ErrBadMessage, id))
			return
		}
		seen[id] = true
		sub, a, err := s.subscribe(ctx, Message{Type: "subscribe", Path: p, ID: id, Device: q.Get("device")}, func(e phone.Event) {
			if e.Ended {
				out.put(outputLine(id, e.URI, []byte(`{"ended":`+quote(e.Reason)+`}`)))
				ended <- struct{}{}
				return
			}
			out.put(outputLine(id, e.URI, e.Content))
		})
		if err != nil {
			writeError(w, statusOf(err), err)
			return
		}
		head = append(head, outputLine(id, a.Envelope.URI, a.Envelope.Raw)...)
		if sub == nil {
			ended <- struct{}{}
			continue
		}
		subs = append(subs, sub)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err := w.Write(b)
		return err == nil
	}
	if !write(head) || rc.Flush() != nil {
		return
	}
	left := len(paths)
	for {
		select {
		case <-ctx.Done():
			return
		case <-out.dropped:
			write(outputLine("bridge", r.URL.Path, []byte(`{"error":`+quote(fmt.Sprintf("the client fell %d lines behind and is dropped", OutboxSize))+`}`)))
			return
		case <-ended:
			if left--; left == 0 {
				drain(out, write)
				rc.Flush()
				return
			}
		case b := <-out.ch:
			if !write(b) {
				return
			}
			if !drain(out, write) || rc.Flush() != nil {
				return
			}
		}
	}
}

// drain writes what waits in the outbox without waiting for more.
func drain(out *outbox, write func([]byte) bool) bool {
	for {
		select {
		case b := <-out.ch:
			if !write(b) {
				return false
			}
		default:
			return true
		}
	}
}
