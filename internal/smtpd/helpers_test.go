package smtpd_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/textproto"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/smtpd"
)

const (
	testKey  = "lk_test_0123456789abcdef"
	testTeam = "team_1"
)

// fakeSubmitter records the calls of the submission server.
type fakeSubmitter struct {
	mu        sync.Mutex
	keys      map[string]string // API key → team
	authErr   error             // returned by Authenticate when set
	submitErr error             // returned by Submit when set
	calls     []submitCall
	// block, when set, makes Submit wait for it (or for its context).
	block    chan struct{}
	entered  chan struct{} // receives once per Submit call, when set
	ctxErrs  []error       // ctx.Err() seen by blocked Submits
	authKeys []string
}

type submitCall struct {
	team    string
	payload string
}

func newFakeSubmitter() *fakeSubmitter {
	return &fakeSubmitter{keys: map[string]string{testKey: testTeam}}
}

func (f *fakeSubmitter) Authenticate(ctx context.Context, apiKey string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.authKeys = append(f.authKeys, apiKey)
	if f.authErr != nil {
		return "", f.authErr
	}
	team, ok := f.keys[apiKey]
	if !ok {
		return "", apperr.New(apperr.Unauthenticated, "Invalid API key")
	}
	return team, nil
}

func (f *fakeSubmitter) Submit(ctx context.Context, teamID string, payload []byte) error {
	f.mu.Lock()
	f.calls = append(f.calls, submitCall{teamID, string(payload)})
	block, entered, err := f.block, f.entered, f.submitErr
	f.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			f.mu.Lock()
			f.ctxErrs = append(f.ctxErrs, ctx.Err())
			f.mu.Unlock()
			return ctx.Err()
		}
	}
	return err
}

func (f *fakeSubmitter) set(fn func(f *fakeSubmitter)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeSubmitter) submitted() []submitCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]submitCall(nil), f.calls...)
}

// fakeHandler records the calls of the bounce intake.
type fakeHandler struct {
	mu    sync.Mutex
	err   error
	calls []bounceCall
}

type bounceCall struct {
	rcpt string
	raw  []byte
}

func (h *fakeHandler) HandleBounce(ctx context.Context, rcpt string, raw []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, bounceCall{rcpt, append([]byte(nil), raw...)})
	return h.err
}

func (h *fakeHandler) received() []bounceCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]bounceCall(nil), h.calls...)
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testCert is the server's self-signed certificate, made once per test
// binary in a temporary data directory, and a client config trusting it.
var (
	certOnce   sync.Once
	serverTLS  *tls.Config
	clientTLS  *tls.Config
	certErr    error
	certDirTmp string
)

func tlsConfigs(t testing.TB) (server, client *tls.Config) {
	t.Helper()
	certOnce.Do(func() {
		dir, err := makeTempDir()
		if err != nil {
			certErr = err
			return
		}
		certDirTmp = dir
		serverTLS, certErr = smtpd.LoadOrCreateCert("", "", dir, "localhost")
		if certErr != nil {
			return
		}
		leaf, err := x509.ParseCertificate(serverTLS.Certificates[0].Certificate[0])
		if err != nil {
			certErr = err
			return
		}
		pool := x509.NewCertPool()
		pool.AddCert(leaf)
		clientTLS = &tls.Config{RootCAs: pool, ServerName: "localhost"}
	})
	if certErr != nil {
		t.Fatal(certErr)
	}
	return serverTLS, clientTLS.Clone()
}

type submissionEnv struct {
	srv  *smtpd.Server
	addr string
	sub  *fakeSubmitter
	logs *syncBuffer
}

// startSubmission starts a submission server on 127.0.0.1:0 with a fake
// Submitter; edit the config with opts.
func startSubmission(t *testing.T, opts ...func(*smtpd.SubmissionConfig)) *submissionEnv {
	t.Helper()
	stls, _ := tlsConfigs(t)
	env := &submissionEnv{sub: newFakeSubmitter(), logs: &syncBuffer{}}
	cfg := smtpd.SubmissionConfig{
		Addr:      "127.0.0.1:0",
		Hostname:  "smtp.lasso.test",
		TLSConfig: stls,
		Submitter: env.sub,
		Logger:    slog.New(slog.NewJSONHandler(env.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, o := range opts {
		o(&cfg)
	}
	env.srv = smtpd.NewSubmission(cfg)
	if err := env.srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.srv.Close() })
	env.addr = env.srv.Addr().String()
	return env
}

// dialAuth connects, STARTTLS, AUTH PLAIN with key.
func dialAuth(t *testing.T, addr, key string) *smtp.Client {
	t.Helper()
	_, ctls := tlsConfigs(t)
	c, err := smtp.DialStartTLS(addr, ctls)
	if err != nil {
		t.Fatalf("dial starttls: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Auth(sasl.NewPlainClient("", "loops", key)); err != nil {
		t.Fatalf("auth: %v", err)
	}
	return c
}

// sendRaw sends one message on an authenticated client; the envelope is
// junk on purpose (it is ignored).
func sendRaw(c *smtp.Client, msg string) error {
	if err := c.Mail("app@example.com", nil); err != nil {
		return err
	}
	if err := c.Rcpt("ignored@example.net", nil); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write([]byte(msg)); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// plainMessage is a text/plain message whose body is body.
func plainMessage(body string) string {
	return "From: App <app@example.com>\r\nTo: someone@example.net\r\nSubject: ignored\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + body + "\r\n"
}

// smtpCode returns the reply of an SMTP error, failing if err is another kind.
func smtpCode(t *testing.T, err error) *smtp.SMTPError {
	t.Helper()
	var se *smtp.SMTPError
	if err == nil {
		t.Fatal("expected an SMTP error, got success")
	}
	if !asSMTP(err, &se) {
		t.Fatalf("expected an SMTP error, got %T %v", err, err)
	}
	return se
}

func asSMTP(err error, target **smtp.SMTPError) bool {
	se, ok := err.(*smtp.SMTPError)
	if ok {
		*target = se
	}
	return ok
}

// textConn is a raw SMTP dialog, for what go-smtp's client won't do.
type textConn struct {
	t  *testing.T
	nc net.Conn
	tp *textproto.Conn
}

func dialText(t *testing.T, addr string) *textConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { nc.Close() })
	tc := &textConn{t: t, nc: nc, tp: textproto.NewConn(nc)}
	tc.expect(220)
	return tc
}

// cmd sends a command and returns the reply code and text (lines joined by
// "\n").
func (c *textConn) cmd(format string, args ...any) (int, string) {
	c.t.Helper()
	if err := c.tp.PrintfLine(format, args...); err != nil {
		c.t.Fatalf("write %q: %v", fmt.Sprintf(format, args...), err)
	}
	return c.read()
}

func (c *textConn) read() (int, string) {
	c.t.Helper()
	code, msg, err := c.tp.ReadResponse(0)
	if err != nil && code == 0 {
		c.t.Fatalf("read reply: %v", err)
	}
	return code, msg
}

func (c *textConn) expect(want int) string {
	c.t.Helper()
	code, msg := c.read()
	if code != want {
		c.t.Fatalf("reply %d %q, want %d", code, msg, want)
	}
	return msg
}

// startTLS upgrades the raw dialog.
func (c *textConn) startTLS(cfg *tls.Config) {
	c.t.Helper()
	if code, msg := c.cmd("STARTTLS"); code != 220 {
		c.t.Fatalf("STARTTLS: %d %s", code, msg)
	}
	tc := tls.Client(c.nc, cfg)
	if err := tc.Handshake(); err != nil {
		c.t.Fatal(err)
	}
	c.nc = tc
	c.tp = textproto.NewConn(tc)
}

// closedByPeer reports whether the server closed the connection.
func (c *textConn) closedByPeer() bool {
	_ = c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := bufio.NewReader(c.nc).ReadByte()
	return err != nil && !isTimeout(err)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func makeTempDir() (string, error) { return os.MkdirTemp("", "smtpd-cert-") }

func TestMain(m *testing.M) {
	code := m.Run()
	if certDirTmp != "" {
		os.RemoveAll(certDirTmp)
	}
	os.Exit(code)
}

// dialTextRaw connects without reading the greeting.
func dialTextRaw(t *testing.T, addr string) *textConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { nc.Close() })
	return &textConn{t: t, nc: nc, tp: textproto.NewConn(nc)}
}

// dialTextErr reports whether a connection can be made and greeted.
func dialTextErr(addr string) (net.Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "220") {
		return nil, fmt.Errorf("greeting %q", line)
	}
	return nc, nil
}
