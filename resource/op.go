package resource

import (
	"fmt"
	"strings"
)

// Op is an operation on a resource.
type Op uint8

// The operations of the interface. Unsubscribe is the device's name for
// DELETE on a resource's Subscription child; it has no envelope name of its own.
const (
	Get Op = iota + 1
	Put
	Post
	Delete
	Subscribe
	Unsubscribe
)

// NumOps bounds the values of Op, for arrays indexed by operation.
const NumOps = int(Unsubscribe) + 1

var opNames = [NumOps]string{"", "get", "put", "post", "delete", "subscribe", "unsubscribe"}

// String returns the operation in lower case, as the envelope's operation field shows it.
func (o Op) String() string {
	if int(o) < len(opNames) && o != 0 {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Valid reports whether o is one of the defined operations.
func (o Op) Valid() bool { return o >= Get && o <= Unsubscribe }

// ParseOp parses an operation name in any case: get, put, post, delete,
// subscribe or unsubscribe.
func ParseOp(s string) (Op, error) {
	for o := Get; o <= Unsubscribe; o++ {
		if strings.EqualFold(s, opNames[o]) {
			return o, nil
		}
	}
	return 0, fmt.Errorf("unknown operation %q; allowed: GET, PUT, POST, DELETE, SUBSCRIBE, UNSUBSCRIBE", s)
}
