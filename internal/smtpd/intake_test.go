package smtpd_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emersion/go-smtp"

	"github.com/lasso-mail/lasso/internal/smtpd"
)

const verp = "bounce+c0000000000000000000000ab@bounces.example.com"

type intakeEnv struct {
	srv  *smtpd.Server
	addr string
	h    *fakeHandler
	logs *syncBuffer
}

func startIntake(t *testing.T, opts ...func(*smtpd.IntakeConfig)) *intakeEnv {
	t.Helper()
	env := &intakeEnv{h: &fakeHandler{}, logs: &syncBuffer{}}
	cfg := smtpd.IntakeConfig{
		Addr:     "127.0.0.1:0",
		Hostname: "bounces.example.com",
		Handler:  env.h,
		Logger:   slog.New(slog.NewJSONHandler(env.logs, nil)),
	}
	for _, o := range opts {
		o(&cfg)
	}
	env.srv = smtpd.NewBounceIntake(cfg)
	if err := env.srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.srv.Close() })
	env.addr = env.srv.Addr().String()
	return env
}

// corpusFile reads a report of the bounce parser's corpus.
func corpusFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "bounce", "testdata", "corpus", "mail", name))
	if err != nil {
		t.Skipf("bounce corpus not available: %v", err)
	}
	return b
}

func normalize(b []byte) string {
	return strings.TrimRight(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
}

func sendReport(addr, from string, rcpts []string, raw []byte) error {
	c, err := smtp.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Mail(from, nil); err != nil {
		return err
	}
	for _, r := range rcpts {
		if err := c.Rcpt(r, nil); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(raw); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

func TestIntakeDeliversDSN(t *testing.T) {
	env := startIntake(t)
	dsn := corpusFile(t, "lhost-postfix-04.eml")
	if err := sendReport(env.addr, "", []string{verp}, dsn); err != nil {
		t.Fatalf("send DSN: %v", err)
	}
	calls := env.h.received()
	if len(calls) != 1 {
		t.Fatalf("HandleBounce called %d times, want 1", len(calls))
	}
	if calls[0].rcpt != verp {
		t.Errorf("rcpt = %q, want %q", calls[0].rcpt, verp)
	}
	if normalize(calls[0].raw) != normalize(dsn) {
		t.Errorf("raw message differs from the DSN sent (%d vs %d bytes)", len(calls[0].raw), len(dsn))
	}
	if strings.Contains(env.logs.String(), "shironeko") {
		t.Error("logs contain the report's content")
	}
}

func TestIntakeARFSeveralRecipients(t *testing.T) {
	env := startIntake(t)
	arf := corpusFile(t, "arf-01.eml")
	other := "bounce+czzzzzzzzzzzzzzzzzzzzzzzz@bounces.example.org"
	c := dialText(t, env.addr)
	if code, ehlo := c.cmd("EHLO mta.example.net"); code != 250 || contains(ehlo, "AUTH") || contains(ehlo, "STARTTLS") {
		t.Fatalf("EHLO: %d %q (no AUTH, no STARTTLS without a TLS config)", code, ehlo)
	}
	if code, msg := c.cmd("MAIL FROM:<>"); code != 250 {
		t.Fatalf("MAIL FROM:<>: %d %q", code, msg)
	}
	if code, msg := c.cmd("RCPT TO:<%s>", verp); code != 250 {
		t.Fatalf("RCPT: %d %q", code, msg)
	}
	if code, msg := c.cmd("RCPT TO:<postmaster@bounces.example.com>"); code != 550 || !contains(msg, "5.1.1") {
		t.Fatalf("non-VERP RCPT: %d %q, want 550 5.1.1", code, msg)
	}
	if code, msg := c.cmd("RCPT TO:<%s>", other); code != 250 {
		t.Fatalf("RCPT: %d %q", code, msg)
	}
	if code, msg := c.cmd("RCPT TO:<%s>", strings.ToUpper(verp)); code != 250 {
		t.Fatalf("duplicate RCPT: %d %q", code, msg)
	}
	if code, _ := c.cmd("DATA"); code != 354 {
		t.Fatalf("DATA: %d", code)
	}
	w := c.tp.DotWriter()
	w.Write(arf)
	w.Close()
	if code, msg := c.read(); code != 250 {
		t.Fatalf("end of DATA: %d %q", code, msg)
	}
	calls := env.h.received()
	if len(calls) != 2 || calls[0].rcpt != verp || calls[1].rcpt != other {
		t.Fatalf("calls: %d %v", len(calls), calls)
	}
	if !bytes.Equal(calls[0].raw, calls[1].raw) || normalize(calls[0].raw) != normalize(arf) {
		t.Fatal("raw report differs")
	}
}

func TestIntakeRejectsOtherRecipients(t *testing.T) {
	env := startIntake(t)
	for _, rcpt := range []string{"postmaster@bounces.example.com", "bounce+short@bounces.example.com", "someone@example.com"} {
		err := sendReport(env.addr, "mailer-daemon@example.net", []string{rcpt}, []byte("Subject: x\r\n\r\nhi\r\n"))
		se := smtpCode(t, err)
		if se.Code != 550 || se.EnhancedCode != (smtp.EnhancedCode{5, 1, 1}) {
			t.Errorf("RCPT %s: %v, want 550 5.1.1", rcpt, se)
		}
	}
	if n := len(env.h.received()); n != 0 {
		t.Fatalf("HandleBounce called %d times", n)
	}
}

func TestIntakeHandlerErrorIsTemporary(t *testing.T) {
	env := startIntake(t)
	env.h.mu.Lock()
	env.h.err = errors.New("database is locked at /var/lib/lasso/lasso.db")
	env.h.mu.Unlock()
	err := sendReport(env.addr, "", []string{verp}, corpusFile(t, "lhost-postfix-04.eml"))
	se := smtpCode(t, err)
	if se.Code != 451 || se.EnhancedCode != (smtp.EnhancedCode{4, 3, 0}) || contains(se.Message, "locked") {
		t.Fatalf("handler error: %v, want 451 4.3.0 without details", se)
	}
}

func TestIntakeStartTLSAndSize(t *testing.T) {
	stls, ctls := tlsConfigs(t)
	env := startIntake(t, func(c *smtpd.IntakeConfig) { c.TLSConfig = stls; c.MaxMessageBytes = 2048 })
	c, err := smtp.DialStartTLS(env.addr, ctls)
	if err != nil {
		t.Fatalf("STARTTLS: %v", err)
	}
	defer c.Close()
	if ok, _ := c.Extension("AUTH"); ok {
		t.Error("intake offers AUTH")
	}
	if size, ok := c.MaxMessageSize(); !ok || size != 2048 {
		t.Errorf("SIZE = %d %v", size, ok)
	}
	if err := c.Mail("", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt(verp, nil); err != nil {
		t.Fatal(err)
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("Subject: x\r\n\r\n" + strings.Repeat("0123456789\r\n", 400)))
	if se := smtpCode(t, w.Close()); se.Code != 552 {
		t.Fatalf("oversized report: %v, want 552", se)
	}
	if n := len(env.h.received()); n != 0 {
		t.Fatalf("HandleBounce called for an oversized report")
	}
}
