package smtpd_test

// Real SMTP clients against the submission server: Debian's swaks and
// nodemailer from npm (testdata/nodemailer, pinned in package-lock.json).

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
)

// runClient runs a command with a deadline and returns its combined output
// and exit code.
func runClient(t *testing.T, cmd *exec.Cmd) (string, int) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("%s: %v\n%s", cmd.Path, err, out)
	return "", -1
}

func TestSwaks(t *testing.T) {
	swaks, err := exec.LookPath("swaks")
	if err != nil {
		t.Skip("swaks not installed (apt-get install swaks): the swaks submission test did not run")
	}
	env := startSubmission(t)
	host, port, _ := net.SplitHostPort(env.addr)
	run := func(password, body string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, swaks,
			"--server", host, "--port", port,
			"--tls", "--auth", "PLAIN", "--auth-user", "loops", "--auth-password", password,
			"--from", "app@example.com", "--to", "ignored@example.net",
			"--helo", "client.example.com", "--timeout", "20",
			"--body", body)
		return runClient(t, cmd)
	}

	t.Run("accepted", func(t *testing.T) {
		out, code := run(testKey, payload)
		if code != 0 {
			t.Fatalf("swaks exit %d:\n%s", code, out)
		}
		// swaks marks the lines it exchanged over TLS with "<~".
		for _, step := range []string{" -> STARTTLS", "<~  235 2.0.0", "<~  250 2.0.0 OK"} {
			if !strings.Contains(out, step) {
				t.Errorf("swaks transcript lacks %q:\n%s", step, out)
			}
		}
		calls := env.sub.submitted()
		if len(calls) != 1 || calls[0].team != testTeam || calls[0].payload != payload {
			t.Fatalf("calls = %+v", calls)
		}
	})
	t.Run("comments", func(t *testing.T) {
		out, code := run(testKey, `{"transactionalId": "clomzp89u035xl50px7wrl0ri", "email": "dan@loops.so" /* recipient */}`)
		if code != 0 {
			t.Fatalf("swaks exit %d:\n%s", code, out)
		}
		calls := env.sub.submitted()
		if got := calls[len(calls)-1].payload; got != `{"transactionalId":"clomzp89u035xl50px7wrl0ri","email":"dan@loops.so"}` {
			t.Fatalf("payload = %s", got)
		}
	})
	t.Run("invalid JSON", func(t *testing.T) {
		out, code := run(testKey, `{"transactionalId": }`)
		if code == 0 || !strings.Contains(out, "550 5.6.0 The message body is not valid JSON") {
			t.Fatalf("swaks exit %d, want a 550 5.6.0:\n%s", code, out)
		}
	})
	t.Run("missing variable", func(t *testing.T) {
		env.sub.set(func(f *fakeSubmitter) {
			f.submitErr = apperr.New(apperr.Invalid, "Missing required data variable(s): confirmationUrl")
		})
		defer env.sub.set(func(f *fakeSubmitter) { f.submitErr = nil })
		out, code := run(testKey, payload)
		if code == 0 || !strings.Contains(out, "550 5.6.0 Missing required data variable(s): confirmationUrl") {
			t.Fatalf("swaks exit %d:\n%s", code, out)
		}
	})
	t.Run("rate limited", func(t *testing.T) {
		env.sub.set(func(f *fakeSubmitter) { f.submitErr = apperr.RateLimited })
		defer env.sub.set(func(f *fakeSubmitter) { f.submitErr = nil })
		out, code := run(testKey, payload)
		if code == 0 || !strings.Contains(out, "451 4.7.1") {
			t.Fatalf("swaks exit %d:\n%s", code, out)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		out, code := run("lk_wrong", payload)
		if code == 0 || !strings.Contains(out, "535 5.7.8") {
			t.Fatalf("swaks exit %d:\n%s", code, out)
		}
	})
}

func TestNodemailer(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed: the nodemailer submission test did not run")
	}
	dir := filepath.Join("testdata", "nodemailer")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "nodemailer")); err != nil {
		t.Skip("nodemailer not installed: run `npm ci` in internal/smtpd/testdata/nodemailer; the nodemailer submission test did not run")
	}
	env := startSubmission(t)
	host, port, _ := net.SplitHostPort(env.addr)
	type result struct {
		OK           bool   `json:"ok"`
		ResponseCode int    `json:"responseCode"`
		Response     string `json:"response"`
	}
	send := func(key, body string, asHTML bool) result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "send.mjs")
		cmd.Dir = dir
		html := "0"
		if asHTML {
			html = "1"
		}
		cmd.Env = append(os.Environ(), "SMTP_HOST="+host, "SMTP_PORT="+port, "LOOPS_API_KEY="+key, "PAYLOAD="+body, "AS_HTML="+html)
		out, code := runClient(t, cmd)
		if code != 0 {
			t.Fatalf("node exit %d:\n%s", code, out)
		}
		var r result
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
			t.Fatalf("node output %q: %v", out, err)
		}
		return r
	}

	t.Run("text", func(t *testing.T) {
		// Long enough that nodemailer encodes it (quoted-printable).
		body := `{"transactionalId": "clomzp89u035xl50px7wrl0ri", "email": "dan@loops.so", "dataVariables": {"name": "Zoë", "confirmationUrl": "https://myapp.com/confirm/12345/` + strings.Repeat("x", 120) + `"}}`
		r := send(testKey, body, false)
		if !r.OK || !strings.HasPrefix(r.Response, "250") {
			t.Fatalf("nodemailer: %+v", r)
		}
		calls := env.sub.submitted()
		want := `{"transactionalId":"clomzp89u035xl50px7wrl0ri","email":"dan@loops.so","dataVariables":{"name":"Zoë","confirmationUrl":"https://myapp.com/confirm/12345/` + strings.Repeat("x", 120) + `"}}`
		if len(calls) != 1 || calls[0].team != testTeam || calls[0].payload != want {
			t.Fatalf("calls = %+v", calls)
		}
	})
	t.Run("html", func(t *testing.T) {
		r := send(testKey, `<p>{"transactionalId": "t1", &quot;email&quot;: "dan@loops.so"}</p>`, true)
		if !r.OK {
			t.Fatalf("nodemailer: %+v", r)
		}
		calls := env.sub.submitted()
		if got := calls[len(calls)-1].payload; got != `{"transactionalId":"t1","email":"dan@loops.so"}` {
			t.Fatalf("payload = %s", got)
		}
	})
	t.Run("not found", func(t *testing.T) {
		env.sub.set(func(f *fakeSubmitter) { f.submitErr = apperr.New(apperr.NotFound, "Transactional email not found.") })
		defer env.sub.set(func(f *fakeSubmitter) { f.submitErr = nil })
		r := send(testKey, payload, false)
		if r.OK || r.ResponseCode != 550 || !strings.Contains(r.Response, "5.6.0 Transactional email not found.") {
			t.Fatalf("nodemailer: %+v", r)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		r := send("lk_wrong", payload, false)
		if r.OK || r.ResponseCode != 535 {
			t.Fatalf("nodemailer: %+v", r)
		}
	})
}
