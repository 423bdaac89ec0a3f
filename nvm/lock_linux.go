package nvm

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxLockOffset bounds the inode numbers used as lock offsets: an offset
// and its length must fit in a signed 64-bit file offset.
const maxLockOffset = 1 << 62

// dirLock is a state directory's lock: a byte of its parent's shared lock
// file, or, when that cannot be used, a lock file of its own.
type dirLock struct {
	shared *sharedLock // nil when own is set
	off    int64
	own    *ownLock
}

// sharedLock is a parent directory's lock file, open once per process
// for all the state directories in it.
type sharedLock struct {
	path string
	f    *os.File
	dev  uint64
	held map[int64]bool // offsets locked through f by this process
}

var (
	sharedMu sync.Mutex
	shared   = map[string]*sharedLock{} // by the parent directory's path
)

// lockDir locks the state directory dir against use by another store, of
// this process or another.
func lockDir(dir string) (*dirLock, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, &DirError{dir, err}
	}
	// the directory's own parent, not a symbolic link's: a program that
	// names the directory by another path must meet the same lock file
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	parent := filepath.Dir(abs)
	var st unix.Stat_t
	if err := unix.Stat(abs, &st); err != nil {
		return nil, &DirError{dir, err}
	}
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if parent == abs || st.Ino >= maxLockOffset || !privateDir(parent) {
		return ownDirLock(dir)
	}
	s, err := openShared(parent)
	if errors.Is(err, errNoSharedFile) || err == nil && s.dev != st.Dev {
		s.releaseIfUnused()
		return ownDirLock(dir)
	}
	if err != nil {
		return nil, err
	}
	off := int64(st.Ino)
	if s.held[off] {
		return nil, errInUse(dir)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: off, Len: 1}
	switch err := unix.FcntlFlock(s.f.Fd(), unix.F_OFD_SETLK, &lk); {
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EACCES):
		s.releaseIfUnused()
		return nil, errInUse(dir)
	case errors.Is(err, unix.EINVAL):
		// no open file description locks in this kernel
		s.releaseIfUnused()
		return ownDirLock(dir)
	case err != nil:
		s.releaseIfUnused()
		return nil, &DirError{dir, fmt.Errorf("lock %s: %w", s.path, err)}
	}
	s.held[off] = true
	return &dirLock{shared: s, off: off}, nil
}

// privateDir reports whether dir is this user's own and no one else may
// write in it: only there do the state directories share a lock file.
// In a directory others may write in, such as /tmp, another user could
// make the shared lock file first and so keep this user's programs from
// locking; every program of a user decides alike for the same directory.
func privateDir(dir string) bool {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return false
	}
	return int(st.Uid) == os.Geteuid() && st.Mode&0o022 == 0
}

func ownDirLock(dir string) (*dirLock, error) {
	own, err := lockOwn(dir)
	if err != nil {
		return nil, err
	}
	return &dirLock{own: own}, nil
}

// errNoSharedFile: the parent directory has no shared lock file, and this
// process may not create one.
var errNoSharedFile = errors.New("no shared lock file")

// openShared returns the open lock file of a parent directory, opening
// it when this process holds no lock in it yet. sharedMu is held. A lock
// file that is there but cannot be used is an *AccessError.
func openShared(parent string) (*sharedLock, error) {
	if s := shared[parent]; s != nil {
		return s, nil
	}
	path := filepath.Join(parent, SharedLockName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, Perm)
	if err != nil {
		if _, serr := os.Lstat(path); errors.Is(serr, fs.ErrNotExist) && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)) {
			return nil, errNoSharedFile
		}
		if errors.Is(err, syscall.ELOOP) {
			err = ErrNotRegular // a symbolic link
		}
		return nil, &AccessError{path, err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, &AccessError{path, err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return nil, &AccessError{path, ErrNotRegular}
	}
	s := &sharedLock{path: path, f: f, dev: st.Dev, held: map[int64]bool{}}
	shared[parent] = s
	return s, nil
}

// releaseIfUnused closes the lock file when it holds no lock of this
// process. sharedMu is held.
func (s *sharedLock) releaseIfUnused() {
	if s == nil || len(s.held) > 0 {
		return
	}
	delete(shared, filepath.Dir(s.path))
	s.f.Close()
}

// release unlocks the directory.
func (l *dirLock) release() error {
	if l.own != nil {
		return l.own.release()
	}
	sharedMu.Lock()
	defer sharedMu.Unlock()
	s := l.shared
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: io.SeekStart, Start: l.off, Len: 1}
	err := unix.FcntlFlock(s.f.Fd(), unix.F_OFD_SETLK, &lk)
	delete(s.held, l.off)
	s.releaseIfUnused()
	if err != nil {
		return fmt.Errorf("unlock %s: %w", s.path, err)
	}
	return nil
}
