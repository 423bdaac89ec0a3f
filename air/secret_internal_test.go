package air

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// A token is 16 to 128 letters, digits, - or _, with spaces around; the
// limits are taken, one past them is refused.
func TestParseTokenLimits(t *testing.T) {
	for _, tt := range []struct {
		content string
		ok      bool
	}{
		{strings.Repeat("a", minToken), true},
		{strings.Repeat("a", minToken-1), false},
		{strings.Repeat("Z", maxToken), true},
		{strings.Repeat("Z", maxToken+1), false},
		{" \n" + strings.Repeat("0", minToken) + "\n", true},
		{strings.Repeat("-_", minToken/2), true},
		{strings.Repeat("azAZ09-_", 2), true},
		{strings.Repeat("a", minToken-1) + "`", false},
		{strings.Repeat("a", minToken-1) + "{", false},
		{strings.Repeat("a", minToken-1) + "@", false},
		{strings.Repeat("a", minToken-1) + "[", false},
		{strings.Repeat("a", minToken-1) + "/", false},
		{strings.Repeat("a", minToken-1) + ":", false},
		{strings.Repeat("a", minToken-1) + ".", false},
	} {
		tok, err := parseToken("t", []byte(tt.content))
		if ok := err == nil; ok != tt.ok || ok && tok != strings.TrimSpace(tt.content) {
			t.Errorf("parseToken(%q) = %q, %v; want ok %v", tt.content, tok, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrToken) {
			t.Errorf("parseToken(%q): %v, not ErrToken", tt.content, err)
		}
	}
}

// A file of secrets may be up to maxSecret bytes long.
func TestReadSecretSize(t *testing.T) {
	for _, tt := range []struct {
		size int
		ok   bool
	}{
		{maxSecret, true},
		{maxSecret + 1, false},
	} {
		file := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(file, make([]byte, tt.size), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := readSecret(file)
		if ok := err == nil; ok != tt.ok || ok && len(b) != tt.size {
			t.Errorf("a secret of %d bytes: %d read, %v; want ok %v", tt.size, len(b), err, tt.ok)
		}
	}
}

// A user JWT that expires at a second is refused from that second on.
func TestCredentialsExpiry(t *testing.T) {
	akp, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	ukp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	upub, _ := ukp.PublicKey()
	uc := jwt.NewUserClaims(upub)
	expires := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	uc.Expires = expires.Unix()
	ujwt, err := uc.Encode(akp)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := ukp.Seed()
	b, err := jwt.FormatUserConfig(ujwt, seed)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		now     time.Time
		expired bool
	}{
		{expires.Add(-time.Second), false},
		{expires, true},
		{expires.Add(time.Second), true},
	} {
		err := parseCredentials("user.creds", b, tt.now)
		if expired := errors.Is(err, ErrCredentials) && strings.Contains(err.Error(), "expired at 2030-01-01T00:00:00Z"); expired != tt.expired || !expired && err != nil {
			t.Errorf("at %v: %v; want expired %t", tt.now, err, tt.expired)
		}
	}
}
