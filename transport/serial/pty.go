package serial

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/google/renameio/v2"
	"golang.org/x/sys/unix"
)

// PTY is a pseudo-terminal the device serves on, reachable at a stable
// symbolic link. The device keeps the terminal's slave side open so that
// clients can come and go, and reads the master without blocking so that
// deadlines and shutdown work.
type PTY struct {
	master *os.File
	slave  *os.File
	tty    string // /dev/pts/N
	link   string
}

// OpenPTY creates a pseudo-terminal in raw mode and points link at it.
func OpenPTY(link string) (*PTY, error) {
	m, sl, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("open a pseudo-terminal: %w", err)
	}
	p := &PTY{slave: sl, tty: sl.Name(), link: link}
	// pty.Open's ioctls leave the master in blocking mode: take a
	// non-blocking duplicate the runtime poller can serve.
	fd, err := unix.Dup(int(m.Fd()))
	m.Close()
	if err == nil {
		err = unix.SetNonblock(fd, true)
	}
	if err != nil {
		sl.Close()
		return nil, fmt.Errorf("pseudo-terminal: %w", err)
	}
	p.master = os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := makeRaw(int(sl.Fd())); err != nil {
		p.Close()
		return nil, fmt.Errorf("pseudo-terminal raw mode: %w", err)
	}
	if link != "" {
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			p.Close()
			return nil, err
		}
		if err := renameio.Symlink(p.tty, link); err != nil {
			p.Close()
			if fi, lerr := os.Lstat(link); lerr == nil && fi.IsDir() {
				return nil, fmt.Errorf("the link to the pseudo-terminal, %s, is a directory; move it out of the way, or choose another path for the link", link)
			}
			return nil, fmt.Errorf("link %s to the pseudo-terminal %s: %w", link, p.tty, err)
		}
	}
	return p, nil
}

// makeRaw puts a terminal in raw mode: no echo, no line editing, no
// character translation, 8-bit characters.
func makeRaw(fd int) error {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return err
	}
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	return unix.IoctlSetTermios(fd, unix.TCSETS, t)
}

// Path returns the terminal's device path.
func (p *PTY) Path() string { return p.tty }

// Link returns the symbolic link to the terminal.
func (p *PTY) Link() string { return p.link }

// Name names the line.
func (p *PTY) Name() string {
	if p.link != "" {
		return p.link
	}
	return p.tty
}

// Read reads from the terminal.
func (p *PTY) Read(b []byte) (int, error) { return p.master.Read(b) }

// Write writes to the terminal.
func (p *PTY) Write(b []byte) (int, error) { return p.master.Write(b) }

// SetReadDeadline sets the read deadline.
func (p *PTY) SetReadDeadline(t time.Time) error { return p.master.SetReadDeadline(t) }

// SetWriteDeadline sets the write deadline.
func (p *PTY) SetWriteDeadline(t time.Time) error { return p.master.SetWriteDeadline(t) }

// SyscallConn returns the master's descriptor, which does not block: a
// session writes to it on the goroutine that has something to write, as
// much as the terminal has room for, as on a TCP connection (NowWriter).
func (p *PTY) SyscallConn() (syscall.RawConn, error) { return p.master.SyscallConn() }

// ClientGone reports whether no process holds the terminal's lock: clients
// of this protocol hold an flock on the terminal for as long as their
// session lasts, and the kernel lets go of it when they exit. The probe uses
// the device's own descriptor, so a client's exclusive mode does not hide it.
func (p *PTY) ClientGone() bool {
	fd := int(p.slave.Fd())
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return false // held
	}
	unix.Flock(fd, unix.LOCK_UN)
	return true
}

// SessionEnded clears the terminal's exclusive mode (TIOCEXCL), which a
// client that was killed leaves set: the device's descriptor keeps the
// terminal open, so the kernel would not clear it.
func (p *PTY) SessionEnded() {
	unix.IoctlSetInt(int(p.slave.Fd()), unix.TIOCNXCL, 0)
}

// Close removes the link (when it still points here) and closes the terminal.
func (p *PTY) Close() error {
	if p.link != "" {
		if target, err := os.Readlink(p.link); err == nil && target == p.tty {
			os.Remove(p.link)
		}
	}
	var errs []error
	if p.master != nil {
		errs = append(errs, p.master.Close())
	}
	errs = append(errs, p.slave.Close())
	return errors.Join(errs...)
}
