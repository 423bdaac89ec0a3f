//go:build !linux

package nvm

// dirLock is a state directory's lock: on this system, a lock file of
// its own.
type dirLock = ownLock

// lockDir locks the state directory dir against use by another store.
func lockDir(dir string) (*dirLock, error) { return lockOwn(dir) }
