package resource

import "strconv"

// Status is a result code of a request, with the numbering of HTTP.
type Status uint16

// The status codes the device answers with.
const (
	StatusOK                  Status = 200
	StatusNoContent           Status = 204
	StatusBadRequest          Status = 400
	StatusForbidden           Status = 403
	StatusNotFound            Status = 404
	StatusMethodNotAllowed    Status = 405
	StatusConflict            Status = 409
	StatusPayloadTooLarge     Status = 413
	StatusTooManyRequests     Status = 429
	StatusInternalServerError Status = 500
	StatusNotImplemented      Status = 501
	StatusServiceUnavailable  Status = 503
	StatusInsufficientStorage Status = 507
)

var statusNames = map[Status]string{
	StatusOK:                  "HTTP_CODE_OK",
	StatusNoContent:           "HTTP_CODE_NO_CONTENT",
	StatusBadRequest:          "HTTP_CODE_BAD_REQUEST",
	StatusForbidden:           "HTTP_CODE_FORBIDDEN",
	StatusNotFound:            "HTTP_CODE_NOT_FOUND",
	StatusMethodNotAllowed:    "HTTP_CODE_METHOD_NOT_ALLOWED",
	StatusConflict:            "HTTP_CODE_CONFLICT",
	StatusPayloadTooLarge:     "HTTP_CODE_PAYLOAD_TOO_LARGE",
	StatusTooManyRequests:     "HTTP_CODE_TOO_MANY_REQUESTS",
	StatusInternalServerError: "HTTP_CODE_INTERNAL_SERVER_ERROR",
	StatusNotImplemented:      "HTTP_CODE_NOT_IMPLEMENTED",
	StatusServiceUnavailable:  "HTTP_CODE_SERVICE_UNAVAILABLE",
	StatusInsufficientStorage: "HTTP_CODE_INSUFFICIENT_STORAGE",
}

// String returns the status name of the envelope's responsestring field,
// for example HTTP_CODE_OK. Codes without a name read HTTP_CODE_<number>.
func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return "HTTP_CODE_" + strconv.Itoa(int(s))
}

// OK reports whether s is a success (2xx).
func (s Status) OK() bool { return s >= 200 && s < 300 }
