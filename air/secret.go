package air

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// The secrets of the radio link: the token of the computer's own NATS
// server, which every program of the user on the computer reads from one
// file, and the credentials file of a server elsewhere. Neither is ever
// written to a log or an error.

// ErrToken is a token file that cannot serve: unreadable, open to other
// users, or holding no token.
var ErrToken = errors.New("the token file of the computer's NATS server cannot serve")

// ErrCredentials is a NATS credentials file that cannot serve: missing,
// unreadable, or not a user JWT and its NKey seed.
var ErrCredentials = errors.New("the NATS credentials file cannot serve")

// ErrDenied is a NATS server that refused the program's credentials.
var ErrDenied = errors.New("refused this program's credentials")

// DefaultTokenFile is where the programs of a user keep the token of the
// computer's own NATS server: nats.token in the directory of senseboard's
// state, $XDG_STATE_HOME/senseboard or ~/.local/state/senseboard.
func DefaultTokenFile() string {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return filepath.Join(os.TempDir(), "senseboard-state", "nats.token")
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "senseboard", "nats.token")
}

// Bounds of a token, in characters.
const (
	minToken = 16
	maxToken = 128
)

// loadToken reads the token in file, or, when there is none, makes a new
// one and writes it there, readable by the user alone. Programs that start
// at once agree on one token: the file appears whole or not at all.
func loadToken(file string) (string, error) {
	for range 2 {
		b, err := readSecret(file)
		if err == nil {
			return parseToken(file, b)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("air: %w: %w", ErrToken, err)
		}
		if err := createToken(file); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("air: %w: write %s: %w", ErrToken, file, err)
		}
	}
	return "", fmt.Errorf("air: %w: %s vanished as it was made", ErrToken, file)
}

// createToken writes a new token to file; fs.ErrExist when there is one.
func createToken(file string) error {
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".nats.token-*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(rand.Text() + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(tmp.Name(), file)
}

// readSecret reads a file of secrets, which only its owner may read.
func readSecret(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if mode := st.Mode(); runtime.GOOS != "windows" && mode.Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is open to other users (mode %v); make it its owner's alone: chmod 600 %s", file, mode.Perm(), file)
	}
	if st.Size() > maxSecret {
		return nil, fmt.Errorf("%s is %d bytes; a secret is a few hundred at most", file, st.Size())
	}
	// Read the file that was checked, not whatever the name points to now.
	return io.ReadAll(io.LimitReader(f, maxSecret))
}

// maxSecret bounds the bytes of a file of secrets.
const maxSecret = 64 << 10

// parseToken takes the token out of the content b of a token file: 16 to
// 128 letters, digits, - or _, with spaces around. Its errors do not show
// the content.
func parseToken(file string, b []byte) (string, error) {
	tok := strings.TrimSpace(string(b))
	ok := len(tok) >= minToken && len(tok) <= maxToken
	for i := 0; ok && i < len(tok); i++ {
		c := tok[i]
		ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
	}
	if !ok {
		return "", fmt.Errorf("air: %w: %s holds no token (%d to %d letters, digits, - or _); remove it, and the next program makes a new one", ErrToken, file, minToken, maxToken)
	}
	return tok, nil
}

// checkCredentials checks, before it goes to a server, that file is a
// NATS credentials file: a user JWT, not expired, and a user NKey seed.
// Its errors do not show the content.
func checkCredentials(file string, now time.Time) error {
	b, err := readSecret(file)
	if err != nil {
		return fmt.Errorf("air: %w: %w", ErrCredentials, err)
	}
	return parseCredentials(file, b, now)
}

// parseCredentials checks the content b of a credentials file.
func parseCredentials(file string, b []byte, now time.Time) error {
	what := "give the .creds file made for this user (nsc generate creds): a user JWT and the user's NKey seed"
	j, err := nkeys.ParseDecoratedJWT(b)
	if err != nil {
		return fmt.Errorf("air: %w: %s holds no user JWT; %s", ErrCredentials, file, what)
	}
	claims, err := jwt.DecodeUserClaims(j)
	if err != nil {
		return fmt.Errorf("air: %w: %s holds no user JWT; %s", ErrCredentials, file, what)
	}
	if claims.Expires != 0 && now.Unix() >= claims.Expires {
		return fmt.Errorf("air: %w: the user JWT in %s expired at %s; ask for new credentials", ErrCredentials, file, time.Unix(claims.Expires, 0).UTC().Format(time.RFC3339))
	}
	kp, err := nkeys.ParseDecoratedUserNKey(b)
	if err != nil {
		return fmt.Errorf("air: %w: %s holds no user NKey seed; %s", ErrCredentials, file, what)
	}
	defer kp.Wipe()
	if pub, err := kp.PublicKey(); err != nil || pub != claims.Subject {
		return fmt.Errorf("air: %w: the NKey seed in %s is not the JWT's user's; %s", ErrCredentials, file, what)
	}
	return nil
}

// denied reports whether a NATS error is a refusal of credentials.
func denied(err error) bool {
	for _, e := range []error{nats.ErrAuthorization, nats.ErrAuthExpired, nats.ErrAuthRevoked, nats.ErrAccountAuthExpired} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
