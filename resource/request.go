package resource

import (
	"fmt"
	"strconv"
	"time"
)

// Request is one call of an operation on a resource.
//
// A caller fills Op, Path, Params and Client. Params are in the
// specification's order: values for {Name} placeholders in Path first, then
// the operation's parameters in the order of the interface definition (query
// parameters, then the body).
//
// The device fills the rest before a handler sees the request: Match, the
// bound Args (path parameters in pattern order, then the operation's
// parameters, each converted to its declared type and checked), and URI.
type Request struct {
	Op     Op
	Path   string
	Params []Value
	Client *Client

	Match Match
	Args  []Value
	URI   string

	args [MaxParams + 2]Value // backing store for Args of small requests
}

// ArgStore returns a zero-length slice with room for n values, backed by the
// request itself when n is small, for building Args without allocating.
func (r *Request) ArgStore(n int) []Value {
	if n <= len(r.args) {
		return r.args[:0]
	}
	return make([]Value, 0, n)
}

// Arg returns bound argument i, or the invalid Value when there is none.
func (r *Request) Arg(i int) Value {
	if i < 0 || i >= len(r.Args) {
		return Value{}
	}
	return r.Args[i]
}

// Response is what a handler answers.
type Response struct {
	Status  Status
	Content any    // nil when the response has no content
	Err     string // for errors: what was wrong and what is allowed
}

// OK returns a 200 response with content, which may be nil.
func OK(content any) Response { return Response{Status: StatusOK, Content: content} }

// Errorf returns a response with an error status and message.
func Errorf(status Status, format string, args ...any) Response {
	return Response{Status: status, Err: fmt.Sprintf(format, args...)}
}

// Error is a failed request: its status and what was wrong.
type Error struct {
	Status Status
	Msg    string
}

func (e *Error) Error() string { return strconv.Itoa(int(e.Status)) + " " + e.Msg }

// Response returns the error as a response.
func (e *Error) Response() Response { return Response{Status: e.Status, Err: e.Msg} }

// Envelope is the answer to a request as every calling path shows it.
type Envelope struct {
	Status    Status
	Op        Op
	URI       string
	Content   any // nil: the content field is absent
	Error     string
	QueryTime time.Duration
}

// Refusal words the envelope's status, and its reason when it has one:
// "status 501: SampleRate 7 is not supported", or "status 501" alone, as
// the Go client's Envelope.Refusal words a device's refusal.
func (e *Envelope) Refusal() string {
	if e.Error == "" {
		return "status " + strconv.Itoa(int(e.Status))
	}
	return "status " + strconv.Itoa(int(e.Status)) + ": " + e.Error
}

// AppendJSON appends the envelope as the specification's JSON object:
// response, responsestring, operation, uri, content (when present),
// querytimems, querytimens, and error (on failures).
func (e *Envelope) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"response":`...)
	b = strconv.AppendUint(b, uint64(e.Status), 10)
	b = append(b, `,"responsestring":`...)
	b = AppendString(b, e.Status.String())
	b = append(b, `,"operation":`...)
	op := e.Op
	if op == Unsubscribe {
		op = Delete
	}
	b = AppendString(b, op.String())
	b = append(b, `,"uri":`...)
	b = AppendString(b, e.URI)
	if e.Content != nil {
		b = append(b, `,"content":`...)
		var err error
		if b, err = AppendJSON(b, e.Content); err != nil {
			return b, err
		}
	}
	b = append(b, `,"querytimems":`...)
	b = strconv.AppendInt(b, e.QueryTime.Milliseconds(), 10)
	b = append(b, `,"querytimens":`...)
	b = strconv.AppendInt(b, e.QueryTime.Nanoseconds(), 10)
	if e.Error != "" {
		b = append(b, `,"error":`...)
		b = AppendString(b, e.Error)
	}
	return append(b, '}'), nil
}

// MarshalJSON encodes the envelope as AppendJSON does.
func (e Envelope) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil) }
