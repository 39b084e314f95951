package smtpd_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/smtpd"
)

const payload = `{"transactionalId":"clomzp89u035xl50px7wrl0ri","email":"dan@loops.so","dataVariables":{"confirmationUrl":"https://myapp.com/confirm/12345/"}}`

func TestSubmissionSubmitsTextPart(t *testing.T) {
	env := startSubmission(t)
	c := dialAuth(t, env.addr, testKey)

	// multipart/alternative, as frameworks send it: the text part is the
	// payload (quoted-printable, long line), the HTML part is ignored.
	msg := "From: app@example.com\r\nTo: someone-else@example.net\r\nSubject: hi\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/alternative; boundary=b1\r\n\r\n" +
		"--b1\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" +
		"{\"transactionalId\":\"clomzp89u035xl50px7wrl0ri\",\"email\":\"dan@loops.so\",\"dataVa=\r\n" +
		"riables\":{\"confirmationUrl\":\"https://myapp.com/confirm/12345/\"}}\r\n" +
		"--b1\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>not this</p>\r\n--b1--\r\n"
	if err := sendRaw(c, msg); err != nil {
		t.Fatalf("send: %v", err)
	}
	calls := env.sub.submitted()
	if len(calls) != 1 {
		t.Fatalf("Submit called %d times, want 1", len(calls))
	}
	if got, want := calls[0].team, testTeam; got != want {
		t.Errorf("team = %q, want %q", got, want)
	}
	if got, want := calls[0].payload, payload; got != want {
		t.Errorf("payload = %s\nwant      %s", got, want)
	}
	// A second message on the same connection.
	if err := sendRaw(c, plainMessage(`{"transactionalId":"x","email":"b@example.com"}`)); err != nil {
		t.Fatalf("second send: %v", err)
	}
	if n := len(env.sub.submitted()); n != 2 {
		t.Fatalf("Submit called %d times, want 2", n)
	}
	if err := c.Quit(); err != nil {
		t.Fatal(err)
	}
}

func TestSubmissionBase64AndCharset(t *testing.T) {
	env := startSubmission(t)
	c := dialAuth(t, env.addr, testKey)
	// Latin-1 "José" in a base64 body.
	latin1 := []byte("{\"transactionalId\":\"t1\",\"email\":\"a@b.co\",\"dataVariables\":{\"name\":\"Jos\xe9\"}}")
	msg := "Subject: x\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=iso-8859-1\r\n" +
		"Content-Transfer-Encoding: base64\r\n\r\n" + base64.StdEncoding.EncodeToString(latin1) + "\r\n"
	if err := sendRaw(c, msg); err != nil {
		t.Fatal(err)
	}
	calls := env.sub.submitted()
	if len(calls) != 1 || !strings.Contains(calls[0].payload, `"name":"José"`) {
		t.Fatalf("calls = %+v", calls)
	}
}

func TestSubmissionCommentsInJSON(t *testing.T) {
	env := startSubmission(t)
	c := dialAuth(t, env.addr, testKey)
	// The Loops Laravel/Rails doc example, comments and all.
	body := "{\r\n  \"transactionalId\": \"clomzp89u035xl50px7wrl0ri\",\r\n" +
		"  \"email\": \"dan@loops.so\", /* recipient */\r\n" +
		"  // the variables of the template\r\n" +
		"  \"dataVariables\": {\r\n    \"confirmationUrl\": \"https://myapp.com/confirm/12345/\", // a URL\r\n  },\r\n}"
	if err := sendRaw(c, plainMessage(body)); err != nil {
		t.Fatal(err)
	}
	calls := env.sub.submitted()
	if len(calls) != 1 || calls[0].payload != payload {
		t.Fatalf("calls = %+v", calls)
	}
}

func TestSubmissionHTMLOnly(t *testing.T) {
	env := startSubmission(t)
	c := dialAuth(t, env.addr, testKey)
	// Supabase-style: the JSON pasted into an HTML template, entities and all.
	html := `<!DOCTYPE html><html><head><title>Confirm</title><style>p{color:red}</style></head><body>` +
		"\r\n<p>{&quot;transactionalId&quot;: &quot;clomzp89u035xl50px7wrl0ri&quot;,<br>\r\n" +
		`&nbsp;&nbsp;"email": "<span>dan</span>@loops.so",` + "\r\n" +
		`&#x20;"dataVariables": {"confirmationUrl": "https://myapp.com/confirm/12345/?a=1&amp;b=&lt;2&gt;"}}</p></body></html>`
	msg := "Subject: x\r\nMIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" +
		strings.ReplaceAll(html, "=", "=3D") + "\r\n"
	if err := sendRaw(c, msg); err != nil {
		t.Fatal(err)
	}
	calls := env.sub.submitted()
	want := `{"transactionalId":"clomzp89u035xl50px7wrl0ri","email":"dan@loops.so","dataVariables":{"confirmationUrl":"https://myapp.com/confirm/12345/?a=1&b=<2>"}}`
	if len(calls) != 1 || calls[0].payload != want {
		t.Fatalf("calls = %+v\nwant payload %s", calls, want)
	}
}

func TestSubmissionAuthLogin(t *testing.T) {
	env := startSubmission(t)
	_, ctls := tlsConfigs(t)
	c, err := smtp.DialStartTLS(env.addr, ctls)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ok := c.SupportsAuth("LOGIN"); !ok {
		t.Fatal("AUTH LOGIN not advertised after STARTTLS")
	}
	if err := c.Auth(sasl.NewLoginClient("loops", testKey)); err != nil {
		t.Fatalf("AUTH LOGIN: %v", err)
	}
	if err := sendRaw(c, plainMessage(payload)); err != nil {
		t.Fatal(err)
	}
	if n := len(env.sub.submitted()); n != 1 {
		t.Fatalf("Submit called %d times", n)
	}
}

func TestSubmissionAuthLoginWithoutInitialResponse(t *testing.T) {
	env := startSubmission(t)
	_, ctls := tlsConfigs(t)
	c := dialText(t, env.addr)
	c.cmd("EHLO client.test")
	c.startTLS(ctls)
	c.cmd("EHLO client.test")
	b64 := base64.StdEncoding.EncodeToString
	if code, msg := c.cmd("AUTH LOGIN"); code != 334 || msg != b64([]byte("Username:")) {
		t.Fatalf("AUTH LOGIN: %d %q", code, msg)
	}
	if code, msg := c.cmd("%s", b64([]byte("loops"))); code != 334 || msg != b64([]byte("Password:")) {
		t.Fatalf("username: %d %q", code, msg)
	}
	if code, msg := c.cmd("%s", b64([]byte(testKey))); code != 235 {
		t.Fatalf("password: %d %q", code, msg)
	}
}

func TestSubmissionRefusesAuthBeforeTLS(t *testing.T) {
	env := startSubmission(t)
	c := dialText(t, env.addr)
	code, ehlo := c.cmd("EHLO client.test")
	if code != 250 || !contains(ehlo, "STARTTLS") || contains(ehlo, "AUTH") {
		t.Fatalf("EHLO before TLS: %d %q (want STARTTLS and no AUTH)", code, ehlo)
	}
	plain := base64.StdEncoding.EncodeToString([]byte("\x00loops\x00" + testKey))
	if code, msg := c.cmd("AUTH PLAIN %s", plain); code != 523 && code != 530 && code != 538 {
		t.Fatalf("AUTH before STARTTLS: %d %q, want a refusal", code, msg)
	}
	if code, msg := c.cmd("MAIL FROM:<app@example.com>"); code != 530 {
		t.Fatalf("MAIL before AUTH: %d %q, want 530", code, msg)
	}
	env.sub.mu.Lock()
	authCalls := len(env.sub.authKeys)
	env.sub.mu.Unlock()
	if authCalls != 0 {
		t.Fatalf("Authenticate called %d times before TLS", authCalls)
	}
	// After STARTTLS, still no MAIL without AUTH.
	_, ctls := tlsConfigs(t)
	c.startTLS(ctls)
	if code, ehlo := c.cmd("EHLO client.test"); code != 250 || !contains(ehlo, "AUTH PLAIN LOGIN") {
		t.Fatalf("EHLO after TLS: %d %q", code, ehlo)
	}
	if code, msg := c.cmd("MAIL FROM:<app@example.com>"); code != 530 || !contains(msg, "5.7.0") {
		t.Fatalf("MAIL after TLS before AUTH: %d %q, want 530 5.7.0", code, msg)
	}
}

func TestSubmissionWrongKey(t *testing.T) {
	env := startSubmission(t)
	_, ctls := tlsConfigs(t)
	c, err := smtp.DialStartTLS(env.addr, ctls)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Auth(sasl.NewPlainClient("", "loops", "lk_wrong"))
	if se := smtpCode(t, err); se.Code != 535 || se.EnhancedCode != (smtp.EnhancedCode{5, 7, 8}) {
		t.Fatalf("wrong key: %v, want 535 5.7.8", se)
	}
	if n := len(env.sub.submitted()); n != 0 {
		t.Fatalf("Submit called %d times", n)
	}
}

func TestSubmissionTooManyAuthFailuresCloses(t *testing.T) {
	env := startSubmission(t, func(c *smtpd.SubmissionConfig) { c.MaxAuthFailures = 2 })
	_, ctls := tlsConfigs(t)
	c := dialText(t, env.addr)
	c.cmd("EHLO client.test")
	c.startTLS(ctls)
	c.cmd("EHLO client.test")
	bad := base64.StdEncoding.EncodeToString([]byte("\x00loops\x00nope"))
	if code, _ := c.cmd("AUTH PLAIN %s", bad); code != 535 {
		t.Fatalf("first failure: %d", code)
	}
	if code, _ := c.cmd("AUTH PLAIN %s", bad); code != 535 {
		t.Fatalf("second failure: %d", code)
	}
	if !c.closedByPeer() {
		t.Fatal("connection still open after MaxAuthFailures")
	}
}

func TestSubmissionAuthenticateErrors(t *testing.T) {
	env := startSubmission(t)
	env.sub.set(func(f *fakeSubmitter) { f.authErr = errors.New("db: connection refused at 10.0.0.3") })
	_, ctls := tlsConfigs(t)
	c, err := smtp.DialStartTLS(env.addr, ctls)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	se := smtpCode(t, c.Auth(sasl.NewPlainClient("", "loops", testKey)))
	if se.Code/100 != 4 || contains(se.Message, "10.0.0.3") {
		t.Fatalf("Authenticate failing: %v, want a temporary reply with no details", se)
	}
}

func TestSubmissionInvalidJSON(t *testing.T) {
	env := startSubmission(t)
	c := dialAuth(t, env.addr, testKey)
	for _, tc := range []struct {
		body, want string
	}{
		{`{"transactionalId": "x", "email": }`, "not valid JSON"},
		{`["not", "an", "object"]`, "must be a JSON object"},
		{`Hello, please send the welcome email.`, "not valid JSON"},
		{`{"a": 1} /* unterminated`, "unterminated /* comment"},
	} {
		err := sendRaw(c, plainMessage(tc.body))
		se := smtpCode(t, err)
		if se.Code != 550 || se.EnhancedCode != (smtp.EnhancedCode{5, 6, 0}) || !contains(se.Message, tc.want) || !contains(se.Message, "POST /v1/transactional") {
			t.Errorf("body %q: %d %v %q, want 550 5.6.0 with %q", tc.body, se.Code, se.EnhancedCode, se.Message, tc.want)
		}
	}
	if n := len(env.sub.submitted()); n != 0 {
		t.Fatalf("Submit called %d times for invalid bodies", n)
	}
}

func TestSubmissionErrorReplies(t *testing.T) {
	env := startSubmission(t)
	c := dialAuth(t, env.addr, testKey)
	for _, tc := range []struct {
		name     string
		err      error
		code     int
		enhanced smtp.EnhancedCode
		text     string
	}{
		{"invalid", apperr.New(apperr.Invalid, "Missing required data variable(s): confirmationUrl").With("path", "dataVariables"), 550, smtp.EnhancedCode{5, 6, 0}, "Missing required data variable(s): confirmationUrl"},
		{"not found", apperr.New(apperr.NotFound, "Transactional email not found."), 550, smtp.EnhancedCode{5, 6, 0}, "Transactional email not found."},
		{"unprocessable", apperr.New(apperr.Unprocessable, "Email is not published."), 550, smtp.EnhancedCode{5, 6, 0}, "Email is not published."},
		{"conflict", apperr.New(apperr.Conflict, "Idempotency key already used."), 554, smtp.EnhancedCode{5, 6, 0}, "Idempotency key already used."},
		{"too large", apperr.New(apperr.TooLarge, "Payload too large (max 4 MB)."), 552, smtp.EnhancedCode{5, 3, 4}, "Payload too large (max 4 MB)."},
		{"forbidden", apperr.New(apperr.Forbidden, "Attachments are not enabled for this team."), 554, smtp.EnhancedCode{5, 7, 1}, "Attachments are not enabled for this team."},
		{"rate limited", apperr.New(apperr.RateLimited, "Rate limit of 10 requests per second exceeded."), 451, smtp.EnhancedCode{4, 7, 1}, "Rate limit of 10 requests per second exceeded."},
		{"rate limited bare", fmt.Errorf("team t: %w", apperr.RateLimited), 451, smtp.EnhancedCode{4, 7, 1}, "Rate limit exceeded, try again later"},
		{"unauthenticated", apperr.New(apperr.Unauthenticated, "Invalid API key"), 535, smtp.EnhancedCode{5, 7, 8}, "Invalid API key"},
		{"unknown", errors.New("insert send: database is locked (SQLITE_BUSY) /var/lib/lasso"), 451, smtp.EnhancedCode{4, 3, 0}, "Temporary server error, try again later"},
		{"multi-line message", apperr.New(apperr.Invalid, "line one\r\n250 fake\nline two"), 550, smtp.EnhancedCode{5, 6, 0}, "line one 250 fake line two"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env.sub.set(func(f *fakeSubmitter) { f.submitErr = tc.err })
			se := smtpCode(t, sendRaw(c, plainMessage(payload)))
			if se.Code != tc.code || se.EnhancedCode != tc.enhanced || se.Message != tc.text {
				t.Fatalf("got %d %v %q, want %d %v %q", se.Code, se.EnhancedCode, se.Message, tc.code, tc.enhanced, tc.text)
			}
		})
	}
	env.sub.set(func(f *fakeSubmitter) { f.submitErr = nil })
	if err := sendRaw(c, plainMessage(payload)); err != nil {
		t.Fatalf("after errors, a good send: %v", err)
	}
}

func TestSubmissionTooLarge(t *testing.T) {
	env := startSubmission(t, func(c *smtpd.SubmissionConfig) { c.MaxMessageBytes = 1024 })
	c := dialAuth(t, env.addr, testKey)
	big := `{"transactionalId":"x","email":"a@b.co","dataVariables":{"v":"` + strings.Repeat("a", 4000) + `"}}`
	se := smtpCode(t, sendRaw(c, plainMessage(big)))
	if se.Code != 552 {
		t.Fatalf("oversized: %v, want 552", se)
	}
	// The same size in short lines, on a new connection.
	c = dialAuth(t, env.addr, testKey)
	se = smtpCode(t, sendRaw(c, plainMessage(strings.Repeat(`{"a":"`+strings.Repeat("b", 60)+`"}`+"\r\n", 40))))
	if se.Code != 552 || se.EnhancedCode != (smtp.EnhancedCode{5, 3, 4}) {
		t.Fatalf("oversized: %v, want 552 5.3.4", se)
	}
	if n := len(env.sub.submitted()); n != 0 {
		t.Fatalf("Submit called for an oversized message")
	}
}

func TestSubmissionMaxRecipients(t *testing.T) {
	env := startSubmission(t, func(c *smtpd.SubmissionConfig) { c.MaxRecipients = 2 })
	c := dialAuth(t, env.addr, testKey)
	if err := c.Mail("a@example.com", nil); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := c.Rcpt(fmt.Sprintf("r%d@example.com", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if se := smtpCode(t, c.Rcpt("r3@example.com", nil)); se.Code != 452 {
		t.Fatalf("third RCPT: %v, want 452", se)
	}
}

func TestSubmissionMaxConnections(t *testing.T) {
	env := startSubmission(t, func(c *smtpd.SubmissionConfig) { c.MaxConnections = 1 })
	dialText(t, env.addr) // holds the only slot
	c := dialTextRaw(t, env.addr)
	if code, msg := c.read(); code != 421 {
		t.Fatalf("second connection: %d %q, want 421", code, msg)
	}
}

func TestSubmissionIdleTimeout(t *testing.T) {
	env := startSubmission(t, func(c *smtpd.SubmissionConfig) { c.ReadTimeout = 200 * time.Millisecond })
	c := dialText(t, env.addr)
	start := time.Now()
	code, msg := c.read()
	if code != 421 || time.Since(start) > 3*time.Second {
		t.Fatalf("idle connection: %d %q after %v, want 421 soon", code, msg, time.Since(start))
	}
	if !c.closedByPeer() {
		t.Fatal("idle connection not closed")
	}
}

func TestSubmissionMaxConnDuration(t *testing.T) {
	env := startSubmission(t, func(c *smtpd.SubmissionConfig) { c.MaxConnDuration = 300 * time.Millisecond })
	c := dialText(t, env.addr)
	// Busy but never done: a NOOP every 50 ms.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if err := c.tp.PrintfLine("NOOP"); err != nil {
			return // closed
		}
		code, _, err := c.tp.ReadResponse(0)
		if err != nil || code == 421 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("connection outlived MaxConnDuration")
}

func TestSubmissionLogsNoSecrets(t *testing.T) {
	env := startSubmission(t)
	c := dialAuth(t, env.addr, testKey)
	secret := `{"transactionalId":"x","email":"very-private@example.com","dataVariables":{"token":"SECRET-TOKEN-42"}}`
	if err := sendRaw(c, plainMessage(secret)); err != nil {
		t.Fatal(err)
	}
	env.sub.set(func(f *fakeSubmitter) { f.submitErr = apperr.New(apperr.Invalid, "Bad.") })
	_ = sendRaw(c, plainMessage(secret))
	env.sub.set(func(f *fakeSubmitter) { f.submitErr = errors.New("boom") })
	_ = sendRaw(c, plainMessage(secret))
	c.Quit()
	bad := dialText(t, env.addr)
	bad.cmd("EHLO x")
	_, ctls := tlsConfigs(t)
	bad.startTLS(ctls)
	bad.cmd("EHLO x")
	bad.cmd("AUTH PLAIN %s", base64.StdEncoding.EncodeToString([]byte("\x00loops\x00lk_WRONG_KEY_777")))
	env.srv.Close()
	logs := env.logs.String()
	for _, s := range []string{testKey, "lk_WRONG_KEY_777", "SECRET-TOKEN-42", "very-private"} {
		if strings.Contains(logs, s) {
			t.Errorf("logs contain %q:\n%s", s, logs)
		}
	}
	for _, s := range []string{"smtp submission accepted", "smtp submission rejected", "smtp submission failed", "smtp auth failed"} {
		if !strings.Contains(logs, s) {
			t.Errorf("logs lack %q:\n%s", s, logs)
		}
	}
}

func TestSubmissionGracefulStop(t *testing.T) {
	env := startSubmission(t)
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	env.sub.set(func(f *fakeSubmitter) { f.block, f.entered = release, entered })

	idle := dialText(t, env.addr)
	c := dialAuth(t, env.addr, testKey)
	sent := make(chan error, 1)
	go func() { sent <- sendRaw(c, plainMessage(payload)) }()
	<-entered

	stopped := make(chan error, 1)
	go func() { stopped <- env.srv.Stop(context.Background()) }()
	if !idle.closedByPeer() {
		t.Fatal("idle connection not closed by Stop")
	}
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned %v while a message was in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := dialTextErr(env.addr); err == nil {
		t.Fatal("new connections still accepted after Stop")
	}
	close(release)
	if err := <-sent; err != nil {
		t.Fatalf("in-flight message: %v, want its 250", err)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("Stop: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return after the in-flight message")
	}
	if err := env.srv.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := env.srv.Start(context.Background()); !errors.Is(err, smtpd.ErrServerClosed) {
		t.Fatalf("Start after Stop: %v", err)
	}
}

func TestSubmissionStopTimeoutCancels(t *testing.T) {
	env := startSubmission(t)
	entered := make(chan struct{}, 1)
	env.sub.set(func(f *fakeSubmitter) { f.block, f.entered = make(chan struct{}), entered })
	c := dialAuth(t, env.addr, testKey)
	sent := make(chan error, 1)
	go func() { sent <- sendRaw(c, plainMessage(payload)) }()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := env.srv.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop = %v, want DeadlineExceeded", err)
	}
	if err := <-sent; err == nil {
		t.Fatal("the cut-off message got a success reply")
	}
	env.sub.mu.Lock()
	defer env.sub.mu.Unlock()
	if len(env.sub.ctxErrs) != 1 {
		t.Fatalf("Submit's context not cancelled: %v", env.sub.ctxErrs)
	}
}

func TestServerLifecycle(t *testing.T) {
	stls, _ := tlsConfigs(t)
	s := smtpd.NewSubmission(smtpd.SubmissionConfig{Addr: "127.0.0.1:0", TLSConfig: stls, Submitter: newFakeSubmitter()})
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("Stop before Start: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close twice: %v", err)
	}

	noTLS := smtpd.NewSubmission(smtpd.SubmissionConfig{Addr: "127.0.0.1:0", Submitter: newFakeSubmitter()})
	if err := noTLS.Start(context.Background()); err == nil || !contains(err.Error(), "TLS") {
		t.Fatalf("Start without TLS: %v", err)
	}

	// Listen + Serve, then Close.
	s2 := smtpd.NewSubmission(smtpd.SubmissionConfig{Addr: "127.0.0.1:0", TLSConfig: stls, Submitter: newFakeSubmitter()})
	ln, err := s2.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s2.Serve(ln) }()
	c := dialText(t, ln.Addr().String())
	c.cmd("EHLO x")
	if err := s2.Start(context.Background()); err != nil {
		t.Fatalf("Start while serving: %v", err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve after Close: %v", err)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 3 {
		env := startSubmission(t)
		var wg sync.WaitGroup
		for range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := dialAuth(t, env.addr, testKey)
				_ = sendRaw(c, plainMessage(payload))
			}()
		}
		wg.Wait()
		dialText(t, env.addr) // left open
		if err := env.srv.Close(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= before+2 {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d before, %d after Close\n%s", before, n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCloseHurriesStop(t *testing.T) {
	env := startSubmission(t)
	entered := make(chan struct{}, 1)
	env.sub.set(func(f *fakeSubmitter) { f.block, f.entered = make(chan struct{}), entered })
	c := dialAuth(t, env.addr, testKey)
	go func() { _ = sendRaw(c, plainMessage(payload)) }()
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- env.srv.Stop(context.Background()) }()
	time.Sleep(50 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- env.srv.Close() }()
	for name, ch := range map[string]chan error{"Stop": stopped, "Close": closed} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s still waiting for the busy connection after Close", name)
		}
	}
}
