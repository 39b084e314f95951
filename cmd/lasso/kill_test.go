package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/delivery/deliverytest"
)

// TestMain lets the test binary act as the lasso binary in a subprocess, so
// that a test can kill -9 a real server.
func TestMain(m *testing.M) {
	if args := os.Getenv("LASSO_TEST_RUN_ARGS"); args != "" {
		var argv []string
		_ = json.Unmarshal([]byte(args), &argv)
		if err := run(context.Background(), argv, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func startServe(t *testing.T, logPath string, args ...string) *exec.Cmd {
	t.Helper()
	argv, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "LASSO_TEST_RUN_ARGS="+string(argv))
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func waitHealthy(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if res, err := http.Get(base + "/healthz"); err == nil {
			res.Body.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("server did not come up")
}

// TestKillDuringBurst sends a burst of 5,000 transactional emails, kills the
// server with SIGKILL in the middle, restarts it on the same data dir and
// counts at the relay sink: every accepted send arrives (none lost), and
// duplicates are at most the SMTP transactions that were in flight.
func TestKillDuringBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("burst test")
	}
	const total = 5000
	sink := deliverytest.NewSink(t, deliverytest.SinkOpts{DiscardData: true})
	dir := t.TempDir()
	addr := freeAddr(t)
	base := "http://" + addr
	logPath := filepath.Join(t.TempDir(), "serve.log")
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("server log:\n%s", b)
		}
	}()
	serveArgs := []string{"serve", "--data-dir", dir, "--http-addr", addr, "--smtp-addr", freeAddr(t), "--bounce-addr", "off", "--rate-limit", "0",
		"--smtp-relay", "smtp://" + sink.Addr + "?tls=none", "--hostname", "mta.lasso.test", "--log-level", "warn"}

	key := strings.TrimSpace(lassoCLI(t, "keys", "create", "--team", "Burst", "--data-dir", dir))
	lassoCLI(t, "domains", "add", "--team", "Burst", "--domain", "example.com", "--verified", "--data-dir", dir)
	srv := startServe(t, logPath, serveArgs...)
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	waitHealthy(t, base)

	call := func(method, path, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return res.StatusCode, m
	}
	code, r := call("POST", "/api/v1/transactional-emails", `{"name":"Receipt"}`)
	if code != 201 {
		t.Fatalf("create template: %d %v", code, r)
	}
	id, draft, rev := r["id"].(string), r["draftEmailMessageId"].(string), r["draftEmailMessageContentRevisionId"].(string)
	if code, r = call("POST", "/api/v1/email-messages/"+draft, fmt.Sprintf(`{"expectedRevisionId":%q,"subject":"Receipt {data.n}","fromName":"Shop","fromEmail":"receipts","lmx":"<Paragraph>Order {data.n}</Paragraph>"}`, rev)); code != 200 {
		t.Fatalf("update message: %d %v", code, r)
	}
	if code, r = call("POST", "/api/v1/transactional-emails/"+id+"/publish", ""); code != 200 {
		t.Fatalf("publish: %d %v", code, r)
	}

	var accepted sync.Map
	var nAccepted atomic.Int64
	var killed atomic.Bool
	jobs := make(chan int)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second}
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				rcpt := fmt.Sprintf("r%05d@example.net", i)
				body := fmt.Sprintf(`{"transactionalId":%q,"email":%q,"dataVariables":{"n":"%d"}}`, id, rcpt, i)
				req, _ := http.NewRequest("POST", base+"/api/v1/transactional", bytes.NewReader([]byte(body)))
				req.Header.Set("Authorization", "Bearer "+key)
				res, err := client.Do(req)
				if err != nil {
					continue // the server is down: not accepted
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode == 200 {
					accepted.Store(rcpt, true)
					nAccepted.Add(1)
				}
			}
		}()
	}
	var inFlightAtKill int
	for i := range total {
		if i == total/2 && !killed.Load() {
			// Kill while sends are both being accepted and delivered.
			waitUntil := time.Now().Add(2 * time.Minute)
			for len(sink.Messages()) < 200 {
				if time.Now().After(waitUntil) {
					close(jobs)
					t.Fatalf("no mail reached the sink: %d accepted, %d received", nAccepted.Load(), len(sink.Messages()))
				}
				time.Sleep(5 * time.Millisecond)
			}
			inFlightAtKill = sink.OpenConnections()
			_ = srv.Process.Signal(os.Kill)
			_ = srv.Wait()
			killed.Store(true)
			t.Logf("killed after %d accepted, %d received, %d SMTP connections open", nAccepted.Load(), len(sink.Messages()), inFlightAtKill)
			srv = startServe(t, logPath, serveArgs...)
			waitHealthy(t, base)
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()

	// Wait until every accepted send arrived and the sink goes quiet.
	deadline := time.Now().Add(5 * time.Minute)
	last, stableSince := -1, time.Now()
	for time.Now().Before(deadline) {
		got := map[string]bool{}
		for _, m := range sink.Messages() {
			got[m.To[0]] = true
		}
		missing := 0
		accepted.Range(func(k, _ any) bool {
			if !got[k.(string)] {
				missing++
			}
			return true
		})
		n := len(sink.Messages())
		if n != last {
			last, stableSince = n, time.Now()
		}
		if missing == 0 && time.Since(stableSince) > 2*time.Second {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	counts := map[string]int{}
	for _, m := range sink.Messages() {
		counts[m.To[0]]++
	}
	lost, dups := 0, 0
	accepted.Range(func(k, _ any) bool {
		if counts[k.(string)] == 0 {
			lost++
		}
		return true
	})
	for _, c := range counts {
		if c > 1 {
			dups += c - 1
		}
	}
	// Jobs left running at the kill are rescued by the restarted server
	// (it logs how many).
	logb, _ := os.ReadFile(logPath)
	rescued := 0
	if m := regexp.MustCompile(`rescued jobs left running by a previous process.*jobs=(\d+)`).FindSubmatch(logb); m != nil {
		rescued, _ = strconv.Atoi(string(m[1]))
	}
	fmt.Printf("kill -9 burst: accepted=%d received=%d distinct=%d lost=%d duplicates=%d (jobs rescued at restart: %d; SMTP connections open at the kill: %d)\n",
		nAccepted.Load(), len(sink.Messages()), len(counts), lost, dups, rescued, inFlightAtKill)
	if lost != 0 {
		t.Fatalf("%d accepted sends were lost", lost)
	}
	// At most --send-concurrency (10) SMTP transactions run at once, and a
	// worker records each result before starting the next one.
	if dups > 10 {
		t.Fatalf("%d duplicates, more than the 10 SMTP transactions in flight", dups)
	}
	if nAccepted.Load() < total/2 {
		t.Fatalf("only %d of %d accepted", nAccepted.Load(), total)
	}
}
