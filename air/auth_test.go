package air_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"senseboard/air"
	"senseboard/air/airtest"
	"senseboard/internal/await"
)

// TestMain keeps the token file of links that name none (the example's)
// out of the user's state directory.
func TestMain(m *testing.M) { airtest.Main(m) }

// logBuffer collects what links log, for tests that look for secrets in
// it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logTo makes o log everything to b.
func logTo(o air.Options, b *logBuffer) air.Options {
	o.Log = slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return o
}

// withToken makes o use the token in file.
func withToken(o air.Options, file string) air.Options {
	o.TokenFile = file
	return o
}

// hidden fails the test when text shows any of the secrets.
func hidden(t *testing.T, what, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("%s shows the secret %q: %s", what, s, text)
		}
	}
}

// TestLocalServerAsksForToken: the computer's server takes only clients
// that show the token in the user's token file, which the first program
// made readable by its owner alone; it serves clients on loopback and
// nothing else (no WebSocket a web page could reach, no monitoring).
func TestLocalServerAsksForToken(t *testing.T) {
	t.Parallel()
	addr := airtest.FreeLocal(t)
	var logs logBuffer
	first := airtest.Local(t, addr, logTo(fast, &logs))
	second := airtest.Local(t, addr, logTo(fast, &logs))
	if !first.Embedded() || second.Embedded() {
		t.Fatal("the first program does not run the server, or the second runs one too")
	}
	file := airtest.TokenFile(t)
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", st.Mode(), err)
	}
	b, _ := os.ReadFile(file)
	token := strings.TrimSpace(string(b))

	url := "nats://" + addr
	for _, tt := range []struct {
		name string
		opts []nats.Option
		ok   bool
	}{
		{"no token", nil, false},
		{"another token", []nats.Option{nats.Token("ANOTHERTOKEN0123456789")}, false},
		{"a user and password", []nats.Option{nats.UserInfo("senseboard", token)}, false},
		{"the token", []nats.Option{nats.Token(token)}, true},
	} {
		nc, err := nats.Connect(url, tt.opts...)
		if tt.ok != (err == nil) || !tt.ok && !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("a client with %s: %v", tt.name, err)
		}
		if nc != nil {
			nc.Close()
		}
	}

	// a program of another user (another token file) is refused, and
	// says so; so is one that joins by URL without the token
	other := filepath.Join(t.TempDir(), "nats.token")
	_, err = air.Local(addr, withToken(logTo(fast, &logs), other))
	if !errors.Is(err, air.ErrDenied) || !strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), "another user") {
		t.Errorf("a program with another token: %v", err)
	}
	b, _ = os.ReadFile(other)
	hidden(t, "the refusal", err.Error(), token, strings.TrimSpace(string(b)))
	if _, err := air.Join(url, fast); !errors.Is(err, air.ErrDenied) {
		t.Errorf("a program that joins by URL without the token: %v", err)
	}

	srv := air.EmbeddedServer(first)
	if srv.MonitorAddr() != nil || srv.ClusterAddr() != nil || srv.ProfilerAddr() != nil || !strings.HasSuffix(srv.WebsocketURL(), ":0") {
		t.Errorf("the server listens on more than its client port: monitor %v cluster %v profiler %v websocket %s",
			srv.MonitorAddr(), srv.ClusterAddr(), srv.ProfilerAddr(), srv.WebsocketURL())
	}
	first.Close()
	second.Close()
	hidden(t, "the log", logs.String(), token)
}

// TestTokenFile: a token file open to other users, or that holds no
// token, is refused with ErrToken and a message that names the file and
// does not show its content.
func TestTokenFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tt := range []struct {
		name    string
		content string
		mode    os.FileMode
	}{
		{"open to others", "ABCDEFGHIJKLMNOPQRSTUVWXYZ\n", 0o644},
		{"too short", "SHORTSECRET\n", 0o600},
		{"not a token", "NOT A TOKEN OF THIS PROGRAM\n", 0o600},
		{"empty", "", 0o600},
	} {
		file := filepath.Join(dir, tt.name)
		if err := os.WriteFile(file, []byte(tt.content), tt.mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(file, tt.mode)
		_, err := air.Local(airtest.FreeLocal(t), withToken(fast, file))
		if !errors.Is(err, air.ErrToken) || !strings.Contains(err.Error(), file) {
			t.Errorf("%s: %v", tt.name, err)
		}
		if err != nil {
			hidden(t, tt.name, err.Error(), strings.TrimSpace(tt.content))
		}
	}
	if _, err := air.Local(airtest.FreeLocal(t), withToken(fast, dir)); !errors.Is(err, air.ErrToken) {
		t.Errorf("a directory as the token file: %v", err)
	}
}

// TestLocalTakesNoCredentials: a credentials file is for servers
// elsewhere; the computer's own asks for the token.
func TestLocalTakesNoCredentials(t *testing.T) {
	t.Parallel()
	o := withToken(fast, airtest.TokenFile(t))
	o.Creds = filepath.Join(t.TempDir(), "user.creds")
	if _, err := air.Open("local:"+strings.TrimPrefix(airtest.FreeLocal(t), "127.0.0.1:"), o); !errors.Is(err, air.ErrCredentials) {
		t.Errorf("local with a credentials file: %v", err)
	}
}

// operator is a NATS server in operator mode, which knows one account,
// and the keys that sign its users.
type operator struct {
	url     string
	account nkeys.KeyPair // known to the server
	other   nkeys.KeyPair // of an account the server does not know
}

func newOperator(t *testing.T) *operator {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	okp, err := nkeys.CreateOperator()
	must(err)
	opub, _ := okp.PublicKey()
	ojwt, err := jwt.NewOperatorClaims(opub).Encode(okp)
	must(err)
	oc, err := jwt.DecodeOperatorClaims(ojwt)
	must(err)
	op := &operator{}
	op.account, err = nkeys.CreateAccount()
	must(err)
	op.other, err = nkeys.CreateAccount()
	must(err)
	apub, _ := op.account.PublicKey()
	ajwt, err := jwt.NewAccountClaims(apub).Encode(okp)
	must(err)
	resolver := &server.MemAccResolver{}
	must(resolver.Store(apub, ajwt))
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		TrustedOperators: []*jwt.OperatorClaims{oc}, AccountResolver: resolver})
	must(err)
	s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(await.Guard) {
		t.Fatal("the server did not start")
	}
	op.url = s.ClientURL()
	return op
}

// creds writes a credentials file of a new user of account, which
// expires at expires (never when zero); it returns the file and the
// user's seed.
func (op *operator) creds(t *testing.T, account nkeys.KeyPair, expires int64) (file, seed string) {
	t.Helper()
	ukp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	upub, _ := ukp.PublicKey()
	uc := jwt.NewUserClaims(upub)
	uc.Expires = expires
	ujwt, err := uc.Encode(account)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := ukp.Seed()
	b, err := jwt.FormatUserConfig(ujwt, s)
	if err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(t.TempDir(), "user.creds")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return file, string(s)
}

// TestJoinWithCredentials: programs join a server that asks for
// credentials with them, and one reaches the other's device there and
// watches the air with them; a server refuses wrong ones with ErrDenied,
// and a credentials file that cannot serve is refused before with
// ErrCredentials; no error and no log line shows a secret.
func TestJoinWithCredentials(t *testing.T) {
	t.Parallel()
	op := newOperator(t)
	var logs logBuffer
	join := func(where, creds string) (*air.Link, error) {
		o := logTo(fast, &logs)
		o.Creds = creds
		l, err := air.Open(where, o)
		if err == nil {
			t.Cleanup(func() { l.Close() })
		}
		return l, err
	}
	good, seed := op.creds(t, op.account, 0)
	dev, err := join(op.url, good)
	if err != nil {
		t.Fatalf("join with a credentials file: %v", err)
	}
	phone, err := join(op.url, good)
	if err != nil {
		t.Fatalf("join with a credentials file: %v", err)
	}
	c := dialEcho(t, dev, phone)
	c.Write([]byte("hi"))
	b := make([]byte, 2)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "hi" {
		t.Errorf("echo: %q %v", b, err)
	}
	c.Close()
	// the central's bridge watches the air on a second connection, with
	// the same credentials
	if d, err := phone.Watch(); err != nil {
		t.Errorf("watch with a credentials file: %v", err)
	} else {
		d.Close()
	}

	secrets := []string{seed}
	stranger, strangerSeed := op.creds(t, op.other, 0)
	expired, expiredSeed := op.creds(t, op.account, time.Now().Add(-time.Hour).Unix())
	secrets = append(secrets, strangerSeed, expiredSeed)
	garbled := filepath.Join(t.TempDir(), "garbled.creds")
	os.WriteFile(garbled, []byte("-----BEGIN NATS USER JWT-----\nSECRETSECRETSECRET\n------END NATS USER JWT------\n"), 0o600)
	open, _ := os.ReadFile(good)
	loose := filepath.Join(t.TempDir(), "loose.creds")
	os.WriteFile(loose, open, 0o600)
	os.Chmod(loose, 0o644)
	for _, tt := range []struct {
		name, creds string
		want        error
		says        string
	}{
		{"a user of an account the server does not know", stranger, air.ErrDenied, "the user in " + stranger},
		{"an expired user", expired, air.ErrCredentials, "expired at"},
		{"a missing file", filepath.Join(t.TempDir(), "none.creds"), fs.ErrNotExist, "none.creds"},
		{"a file that is no credentials", garbled, air.ErrCredentials, "holds no user JWT"},
		{"a file open to others", loose, air.ErrCredentials, "open to other users"},
	} {
		_, err := join(op.url, tt.creds)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: %v; want %v saying %q", tt.name, err, tt.want, tt.says)
			continue
		}
		hidden(t, tt.name, err.Error(), append(secrets, "SECRETSECRET")...)
	}
	if _, err := join(op.url, ""); !errors.Is(err, air.ErrDenied) || !strings.Contains(err.Error(), "it showed none") {
		t.Errorf("join without credentials: %v", err)
	}
	hidden(t, "the log", logs.String(), secrets...)
}

// TestJoinWithPassword: a server that asks for a user and password is
// joined with them in the URL, and refused without; a token likewise;
// neither the error nor the log shows them.
func TestJoinWithPassword(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		opts      server.Options
		good, bad string // user info in the URL
		secret    string
	}{
		{"password", server.Options{Username: "fleet", Password: "s3cret"}, "fleet:s3cret@", "fleet:wr0ngpassw0rd@", "wr0ngpassw0rd"},
		{"token", server.Options{Authorization: "t0ken-of-the-fleet"}, "t0ken-of-the-fleet@", "t0ken-of-another-fleet@", "t0ken-of-another-fleet"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.Host, o.Port, o.NoLog, o.NoSigs = "127.0.0.1", -1, true, true
			s, err := server.NewServer(&o)
			if err != nil {
				t.Fatal(err)
			}
			s.Start()
			defer s.Shutdown()
			if !s.ReadyForConnections(await.Guard) {
				t.Fatal("the server did not start")
			}
			var logs logBuffer
			hostPort := strings.TrimPrefix(s.ClientURL(), "nats://")
			l, err := air.Open("nats://"+tt.good+hostPort, logTo(fast, &logs))
			if err != nil {
				t.Fatalf("join with credentials: %v", err)
			}
			if strings.Contains(l.URL(), "@") && !strings.Contains(l.URL(), "***@") {
				t.Errorf("the link's URL shows the credentials: %s", l.URL())
			}
			l.Close()
			for _, bad := range []string{tt.bad, ""} {
				_, err = air.Open("nats://"+bad+hostPort, logTo(fast, &logs))
				if !errors.Is(err, air.ErrDenied) {
					t.Errorf("join with %q: %v", bad, err)
				}
				hidden(t, "the refusal", err.Error(), tt.secret)
			}
			hidden(t, "the log", logs.String(), tt.secret, strings.TrimSuffix(tt.good, "@"))
		})
	}
}

// TestURLSecretsStayHidden: the errors of URLs that do not parse, or of
// servers that are not there, show no password.
func TestURLSecretsStayHidden(t *testing.T) {
	t.Parallel()
	for _, where := range []string{
		"nats://user:s3cret@127.0.0.1:1",
		"nats://user:s3cret%zz@127.0.0.1:1",
		"nats://us er:s3cret@127.0.0.1:1",
		"nats://127.0.0.1:1,nats://user:s3cret@127.0.0.1:2",
		"nats://user:s3c,ret@127.0.0.1:1",
		"ftp://user:s3cret@127.0.0.1:1",
	} {
		_, err := air.Open(where, fast)
		if err == nil {
			t.Errorf("%s joined", where)
			continue
		}
		hidden(t, where, err.Error(), "s3c", "ret@")
	}
}
