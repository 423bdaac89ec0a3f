//go:build !unix

package senseboard

// fileLimit returns 0: the system does not bound open files in a way the
// fleet can tell.
func fileLimit() int { return 0 }
