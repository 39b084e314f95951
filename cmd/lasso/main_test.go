package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func lassoCLI(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("lasso %v: %v\n%s", args, err, errb.String())
	}
	return out.String()
}

// TestServeAndCLI starts `lasso serve`, uses the admin commands on the same
// data dir while it runs, calls the API with the new key, then stops the
// server the way SIGTERM does (context cancellation) and expects a clean exit.
func TestServeAndCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var serveErr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "--data-dir", dir, "--http-addr", addr, "--log-format", "json"}, io.Discard, &serveErr)
	}()
	base := "http://" + addr
	deadline := time.Now().Add(15 * time.Second)
	for {
		res, err := http.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start: %v\n%s", err, serveErr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	key := strings.TrimSpace(lassoCLI(t, "keys", "create", "--team", "CLI team", "--name", "ci", "--data-dir", dir))
	if !strings.HasPrefix(key, "lso_") || strings.ContainsAny(key, " \n") {
		t.Fatalf("keys create printed %q", key)
	}
	listID := strings.TrimSpace(lassoCLI(t, "lists", "create", "--team", "CLI team", "--name", "News", "--public", "--data-dir", dir))
	if len(listID) != 25 {
		t.Fatalf("lists create printed %q", listID)
	}
	if out := lassoCLI(t, "lists", "list", "--team", "CLI team", "--data-dir", dir); !strings.Contains(out, listID) {
		t.Fatalf("lists list: %s", out)
	}
	if out := lassoCLI(t, "domains", "add", "--team", "CLI team", "--domain", "example.com", "--verified", "--data-dir", dir); !strings.Contains(out, "_domainkey.example.com") || !strings.Contains(out, "v=DMARC1") {
		t.Fatalf("domains add: %s", out)
	}

	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get("/api/v1/lists"); code != 200 || !strings.Contains(body, listID) {
		t.Fatalf("lists: %d %s", code, body)
	}
	out := lassoCLI(t, "keys", "list", "--data-dir", dir)
	if !strings.Contains(out, "CLI team") || !strings.Contains(out, "active") {
		t.Fatalf("keys list: %s", out)
	}
	prefix := key[:10]
	lassoCLI(t, "keys", "revoke", prefix, "--data-dir", dir)
	if code, body := get("/api/v1/api-key"); code != 401 || !strings.Contains(body, "Invalid API key") {
		t.Fatalf("revoked key: %d %s", code, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not shut down")
	}
	logs := serveErr.String()
	if !strings.Contains(logs, `"msg":"request"`) || !strings.Contains(logs, `"route":"GET /api/v1/lists"`) {
		t.Fatalf("request log lines missing:\n%s", logs)
	}
	if strings.Contains(logs, key) {
		t.Fatal("an API key reached the logs")
	}
	if out := lassoCLI(t, "version"); !strings.HasPrefix(out, "lasso ") {
		t.Fatalf("version: %q", out)
	}
	if out := lassoCLI(t, "migrate", "--data-dir", dir); !strings.Contains(out, "migrated") {
		t.Fatalf("migrate: %q", out)
	}
	var help bytes.Buffer
	if err := run(context.Background(), []string{"serve", "--help"}, &help, io.Discard); err != nil || !strings.Contains(help.String(), "LASSO_HTTP_ADDR") {
		t.Fatalf("serve --help: %v %s", err, help.String())
	}
}

func TestBounceParse(t *testing.T) {
	out := lassoCLI(t, "bounce", "parse", "../../internal/bounce/testdata/corpus/mail/lhost-postfix-04.eml", "../../internal/bounce/testdata/corpus/mail/arf-01.eml")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"kind":"hard"`) || !strings.Contains(lines[0], `"file":"lhost-postfix-04.eml"`) ||
		!strings.Contains(lines[1], `"kind":"complaint"`) {
		t.Fatalf("bounce parse:\n%s", out)
	}
}
