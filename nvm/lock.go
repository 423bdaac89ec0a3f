package nvm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// The locks that keep two programs off one state directory.
//
// On Linux the state directories of one parent directory share one lock
// file there, SharedLockName, and each directory is locked by a byte-range
// lock on that file (an open file description lock, F_OFD_SETLK) at the
// offset of the directory's inode number. A program holds one file
// descriptor per parent directory, however many devices it runs, and the
// kernel releases the locks when the program ends, however it ends.
//
// A directory falls back to a lock of its own, an flock on the file "lock"
// in it, when the shared file cannot be used: on other systems, when the
// parent directory holds no shared lock file and cannot be written, when the directory is on another file
// system than its parent (a mount point), or when the kernel has no open
// file description locks (before Linux 3.15). Two programs that fall back
// differently on the same directory do not see each other's locks: for the
// lock to hold, run the programs that share state directories as the same
// user on the same system.
const (
	// SharedLockName is the lock file in the parent of state directories.
	SharedLockName = "senseboard.lock"
	lockName       = "lock"
)

// errInUse builds the error of a directory held elsewhere.
func errInUse(dir string) error {
	return fmt.Errorf("state directory %s is %w or device", dir, ErrInUse)
}

// ownLock is the fallback lock: an flock on the file "lock" in the
// directory, held open while the store is.
type ownLock struct{ f *os.File }

// lockOwn locks dir by a lock file of its own.
func lockOwn(dir string) (*ownLock, error) {
	lockPath := filepath.Join(dir, lockName)
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR|syscall.O_NONBLOCK, Perm)
	if err != nil {
		return nil, &AccessError{lockPath, err}
	}
	if err := regular(f); err != nil {
		f.Close()
		return nil, &AccessError{lockPath, err}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errInUse(dir)
		}
		return nil, &DirError{dir, err}
	}
	return &ownLock{f}, nil
}

func (l *ownLock) release() error { return l.f.Close() }
