package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/app"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/testdb"
)

type server struct {
	app  *app.App
	url  string
	key  string
	team string
	// stop shuts the server down (HTTP, queue, database) before the test
	// ends, as a process exit would; idempotent.
	stop func()
}

// start runs the whole app on dbURL behind a real loopback HTTP server.
func start(t *testing.T, dbURL string, mutate func(*app.Config)) *server {
	t.Helper()
	// Test webhook receivers listen on 127.0.0.1 (TestWebhookPublicOnly
	// checks the default).
	cfg := app.Config{DatabaseURL: dbURL, DataDir: t.TempDir(), RateLimit: -1, WebhookAllowPrivate: true}
	if mutate != nil {
		mutate(&cfg)
	}
	a, err := app.Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Queue.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	var once sync.Once
	stop := func() {
		once.Do(func() {
			srv.Close()
			_ = a.Queue.Stop(context.Background())
			a.Close()
		})
	}
	t.Cleanup(stop)
	s := &server{app: a, url: srv.URL, stop: stop}
	s.key, s.team = s.newKey(t, "Acme")
	return s
}

func (s *server) newKey(t *testing.T, team string) (string, string) {
	tm, err := s.app.Accounts.EnsureTeam(context.Background(), team)
	if err != nil {
		t.Fatal(err)
	}
	k, _, err := s.app.Accounts.CreateKey(context.Background(), tm.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	return k, tm.ID
}

type resp struct {
	status int
	header http.Header
	raw    string
	body   any
}

func (r resp) obj(t *testing.T) map[string]any {
	t.Helper()
	m, ok := r.body.(map[string]any)
	if !ok {
		t.Fatalf("body is not an object: %s", r.raw)
	}
	return m
}

func (s *server) do(t *testing.T, method, path, body string, hdr ...string) resp {
	return s.doKey(t, s.key, method, path, body, hdr...)
}

func (s *server) doKey(t *testing.T, key, method, path, body string, hdr ...string) resp {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	r := resp{status: res.StatusCode, header: res.Header, raw: string(b)}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &r.body); err != nil {
			t.Fatalf("%s %s: body is not JSON: %q", method, path, b)
		}
	}
	return r
}

func expect(t *testing.T, r resp, status int, fragments ...string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	for _, f := range fragments {
		if !strings.Contains(r.raw, f) {
			t.Fatalf("body %s lacks %s", r.raw, f)
		}
	}
	if status >= 400 {
		m := r.obj(t)
		if m["success"] != false || m["message"] == "" {
			t.Fatalf("error body not in the contract's shape: %s", r.raw)
		}
	}
}

func TestAPIContract(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := start(t, url, nil)
		expect(t, s.do(t, "GET", "/api/v1/api-key", ""), 200, `"teamName":"Acme"`, `"success":true`)
		r := s.doKey(t, "lso_nope", "GET", "/api/v1/api-key", "")
		expect(t, r, 401, `"error":"Invalid API key"`, `"message":"Invalid API key"`)
		expect(t, s.doKey(t, "", "GET", "/api/v1/contacts/find?email=a@b.co", ""), 401)

		// Properties (§5.3).
		expect(t, s.do(t, "POST", "/api/v1/contacts/properties", `{"name":"planName","type":"string"}`), 200, `{"success":true}`)
		expect(t, s.do(t, "POST", "/api/v1/contacts/properties", `{"name":"score","type":"number"}`), 200)
		expect(t, s.do(t, "POST", "/api/v1/contacts/properties", `{"name":"planName","type":"string"}`), 400, "Property already exists.")
		expect(t, s.do(t, "POST", "/api/v1/contacts/properties", `{"name":"teamId","type":"string"}`), 400)
		expect(t, s.do(t, "POST", "/api/v1/contacts/properties", `{"name":"plan_name","type":"string"}`), 400)
		expect(t, s.do(t, "POST", "/api/v1/contacts/properties", `{"name":"x","type":"list"}`), 400)
		r = s.do(t, "GET", "/api/v1/contacts/properties?list=custom", "")
		expect(t, r, 200, `[{"key":"planName","label":"Plan Name","type":"string"},{"key":"score","label":"Score","type":"number"}]`)
		r = s.do(t, "GET", "/api/v1/contacts/properties?list=all", "")
		expect(t, r, 200, `{"key":"firstName","label":"First Name","type":"string"}`)

		// Lists (§5.4).
		expect(t, s.do(t, "GET", "/api/v1/lists", ""), 200, `[]`)
		l, err := s.app.Contacts.CreateList(context.Background(), s.team, "News", "Monthly", true)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, s.do(t, "GET", "/api/v1/lists", ""), 200, fmt.Sprintf(`[{"description":"Monthly","id":"%s","isPublic":true,"name":"News"}]`, l.ID))

		// Contacts (§5.2).
		r = s.do(t, "POST", "/api/v1/contacts/create", fmt.Sprintf(`{"email":"Bob@Example.com","firstName":"Bob","planName":"pro","score":3,"userId":"12345","mailingLists":{"%s":true}}`, l.ID))
		expect(t, r, 200, `"success":true`)
		id := r.obj(t)["id"].(string)
		if len(id) != 25 {
			t.Fatalf("id %q is not 25 characters", id)
		}
		expect(t, s.do(t, "POST", "/api/v1/contacts/create", `{"email":"bob@example.com"}`), 409, "Email or `userId` already exists.")
		expect(t, s.do(t, "POST", "/api/v1/contacts/create", `{"email":"bad"}`), 400, "Invalid email address.")
		expect(t, s.do(t, "POST", "/api/v1/contacts/create", `{"firstName":"x"}`), 400)
		r = s.do(t, "GET", "/api/v1/contacts/find?email=bob%40example.com", "")
		expect(t, r, 200)
		arr := r.body.([]any)
		want := map[string]any{"id": id, "email": "bob@example.com", "firstName": "Bob", "lastName": nil, "source": "API",
			"subscribed": true, "userGroup": "", "userId": "12345", "optInStatus": nil, "planName": "pro", "score": 3.0,
			"mailingLists": map[string]any{l.ID: true}}
		got := arr[0].(map[string]any)
		for k, v := range want {
			if fmt.Sprint(got[k]) != fmt.Sprint(v) {
				t.Fatalf("find: %s = %v, want %v (%s)", k, got[k], v, r.raw)
			}
		}
		expect(t, s.do(t, "GET", "/api/v1/contacts/find?userId=12345", ""), 200, id)
		expect(t, s.do(t, "GET", "/api/v1/contacts/find?email=none%40example.com", ""), 200, `[]`)
		expect(t, s.do(t, "GET", "/api/v1/contacts/find?email=a%40b.co&userId=1", ""), 400)
		expect(t, s.do(t, "GET", "/api/v1/contacts/find", ""), 400)
		expect(t, s.do(t, "GET", "/api/v1/contacts/find?email=bad", ""), 400)

		// Update: change email through userId; null resets; subscribed.
		expect(t, s.do(t, "PUT", "/api/v1/contacts/update", `{"userId":"12345","email":"robert@example.com","planName":null,"subscribed":false}`), 200, id)
		r = s.do(t, "GET", "/api/v1/contacts/find?userId=12345", "")
		if c := r.body.([]any)[0].(map[string]any); c["email"] != "robert@example.com" || c["planName"] != nil || c["subscribed"] != false {
			t.Fatalf("after update: %s", r.raw)
		}
		expect(t, s.do(t, "PUT", "/api/v1/contacts/update", `{"userId":"unknown"}`), 400)
		expect(t, s.do(t, "PUT", "/api/v1/contacts/update", `{"firstName":"x"}`), 400)
		r = s.do(t, "PUT", "/api/v1/contacts/update", `{"email":"new@example.com"}`)
		expect(t, r, 200)
		expect(t, s.do(t, "PUT", "/api/v1/contacts/update", `{"email":"new@example.com","score":"abc"}`), 400)
		expect(t, s.do(t, "PUT", "/api/v1/contacts/update", `{"email":"new@example.com","firstName":"`+strings.Repeat("x", 499)+`"}`), 400, "Some body key or value is longer than allowable")
		expect(t, s.do(t, "PUT", "/api/v1/contacts/update", `{"email":"new@example.com","firstName":"`+strings.Repeat("x", 498)+`"}`), 200)

		// Suppression (§5.2).
		r = s.do(t, "GET", "/api/v1/contacts/suppression?email=robert%40example.com", "")
		expect(t, r, 200, `"isSuppressed":false`, `"removalQuota":{"limit":100,"remaining":100}`, fmt.Sprintf(`"contact":{"email":"robert@example.com","id":"%s","userId":"12345"}`, id))
		expect(t, s.do(t, "DELETE", "/api/v1/contacts/suppression?email=robert%40example.com", ""), 400, "This contact is not suppressed.")
		expect(t, s.do(t, "GET", "/api/v1/contacts/suppression?email=none%40example.com", ""), 404, "This contact was not found.")
		expect(t, s.do(t, "GET", "/api/v1/contacts/suppression", ""), 400, "An email or userId is required.")
		if err := s.app.DB.InTx(context.Background(), func(tx db.Tx) error {
			return s.app.Contacts.Suppress(context.Background(), tx, s.team, "robert@example.com", "hard_bounce")
		}); err != nil {
			t.Fatal(err)
		}
		expect(t, s.do(t, "GET", "/api/v1/contacts/suppression?userId=12345", ""), 200, `"isSuppressed":true`)
		expect(t, s.do(t, "DELETE", "/api/v1/contacts/suppression?userId=12345", ""), 200,
			`"message":"Email removed from suppression list."`, `"removalQuota":{"limit":100,"remaining":99}`, `"success":true`)

		// Events (§5.5).
		expect(t, s.do(t, "POST", "/api/v1/events/send", fmt.Sprintf(`{"eventName":"signup","email":"ev@example.com","firstName":"Eve","eventProperties":{"plan":"pro","amount":12},"contactProperties":{"score":9},"mailingLists":{"%s":true}}`, l.ID)), 200, `{"success":true}`)
		r = s.do(t, "GET", "/api/v1/contacts/find?email=ev%40example.com", "")
		if c := r.body.([]any)[0].(map[string]any); c["firstName"] != "Eve" || c["score"] != 9.0 || c["mailingLists"].(map[string]any)[l.ID] != true {
			t.Fatalf("event contact: %s", r.raw)
		}
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"email":"ev@example.com"}`), 400, "eventName")
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"x"}`), 400)
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"x","userId":"ghost"}`), 400, "Contact not found.")
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"x","email":"ev@example.com","eventProperties":[1]}`), 400)
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"x","email":"ev@example.com"}`, "Idempotency-Key", "k-1"), 200)
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"x","email":"ev@example.com"}`, "Idempotency-Key", "k-1"), 409)
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"eventName":"x","email":"ev@example.com"}`, "Idempotency-Key", strings.Repeat("k", 101)), 400)

		// Delete.
		expect(t, s.do(t, "POST", "/api/v1/contacts/delete", `{"email":"ev@example.com","userId":"1"}`), 400)
		expect(t, s.do(t, "POST", "/api/v1/contacts/delete", `{}`), 400)
		expect(t, s.do(t, "POST", "/api/v1/contacts/delete", `{"email":"ev@example.com"}`), 200, `{"message":"Contact deleted.","success":true}`)
		expect(t, s.do(t, "POST", "/api/v1/contacts/delete", `{"email":"ev@example.com"}`), 404)

		expect(t, s.do(t, "GET", "/api/v1/dedicated-sending-ips", ""), 200, `[]`)
	})
}

func TestAPITransport(t *testing.T) {
	s := start(t, testdb.URL(t, "sqlite"), func(c *app.Config) { c.DedicatedIPs = []string{"192.0.2.10"} })
	for _, p := range []string{"/api/v1", "/api", "/v1"} {
		expect(t, s.do(t, "GET", p+"/api-key", ""), 200, "Acme")
	}
	expect(t, s.do(t, "GET", "/api/dedicated-sending-ips", ""), 200, `["192.0.2.10"]`)
	expect(t, s.do(t, "POST", "/api/v1/contacts/create", `{"email":`), 400, "Invalid JSON body.")
	expect(t, s.do(t, "POST", "/api/v1/contacts/create", `[1,2]`), 400)
	expect(t, s.do(t, "POST", "/api/v1/contacts/create", `{"email":"a@b.co"} {}`), 400)
	expect(t, s.do(t, "POST", "/api/v1/contacts/create", ""), 400)
	expect(t, s.do(t, "POST", "/api/v1/contacts/create", `{"email":"a@b.co","x":"`+strings.Repeat("y", 5<<20)+`"}`), 413)
	r := s.do(t, "GET", "/api/v1/contacts/create", "")
	expect(t, r, 405, "Method not allowed.")
	if r.header.Get("Allow") != "POST" {
		t.Fatalf("Allow = %q", r.header.Get("Allow"))
	}
	expect(t, s.do(t, "GET", "/api/v1/nothing-here", ""), 404)
	r = s.do(t, "OPTIONS", "/api/v1/contacts/create", "", "Origin", "https://evil.example", "Access-Control-Request-Method", "POST")
	if r.header.Get("Access-Control-Allow-Origin") != "" || r.status < 400 {
		t.Fatalf("preflight answered %d with CORS headers %v", r.status, r.header)
	}
	// Health, readiness and metrics.
	for _, p := range []string{"/healthz", "/readyz"} {
		res, err := http.Get(s.url + p)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("%s: %v %v", p, err, res)
		}
		res.Body.Close()
	}
	res, err := http.Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, m := range []string{`lasso_http_requests_total{route="GET /api/v1/api-key",status="200"} 1`, "lasso_http_request_duration_seconds_bucket", "lasso_queue_jobs"} {
		if !bytes.Contains(b, []byte(m)) {
			t.Fatalf("metrics lack %s", m)
		}
	}
}

func TestAPIRateLimit(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := start(t, url, func(c *app.Config) { c.RateLimit = 3 })
		// The limit window is one wall-clock second; retry if a burst
		// straddles a second boundary.
		var codes []int
		for attempt := 0; attempt < 5; attempt++ {
			nextSecond()
			codes = codes[:0]
			var last resp
			for range 5 {
				last = s.do(t, "GET", "/api/v1/api-key", "")
				codes = append(codes, last.status)
			}
			if fmt.Sprint(codes) == "[200 200 200 429 429]" {
				if last.header.Get("x-ratelimit-limit") != "3" || last.header.Get("x-ratelimit-remaining") != "0" {
					t.Fatalf("headers on 429: %v", last.header)
				}
				expect(t, last, 429, "Rate limit of 3 requests per second exceeded.")
				break
			}
		}
		if fmt.Sprint(codes) != "[200 200 200 429 429]" {
			t.Fatalf("codes = %v", codes)
		}
		// Responses before authentication carry the headers too.
		for _, r := range []resp{s.doKey(t, "lso_bad", "GET", "/api/v1/api-key", ""), s.do(t, "GET", "/api/v1/nowhere", ""), s.do(t, "PATCH", "/api/v1/lists", "")} {
			if r.header.Get("x-ratelimit-limit") != "3" || r.header.Get("x-ratelimit-remaining") == "" {
				t.Fatalf("%d without rate-limit headers: %v", r.status, r.header)
			}
		}
		if url == "" || !strings.HasPrefix(url, "postgres") {
			return
		}
		// A second node on the same PostgreSQL shares the team's limit.
		s2 := start(t, url, func(c *app.Config) { c.RateLimit = 3 })
		for attempt := 0; attempt < 5; attempt++ {
			nextSecond()
			codes = codes[:0]
			for i := range 6 {
				srv := s
				if i%2 == 1 {
					srv = s2
				}
				codes = append(codes, srv.do(t, "GET", "/api/v1/api-key", "").status)
			}
			if fmt.Sprint(codes) == "[200 200 200 429 429 429]" {
				return
			}
		}
		t.Fatalf("two nodes: codes = %v", codes)
	})
}

// nextSecond sleeps to just after the next wall-clock second, where a new
// rate-limit window starts.
func nextSecond() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second + 5*time.Millisecond).Sub(now))
}

func TestAPIIdempotencyConcurrent(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := start(t, url, nil)
		const n = 50
		var wg sync.WaitGroup
		codes := make([]int, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i] = s.do(t, "POST", "/api/v1/events/send", `{"eventName":"purchase","email":"idem@example.com"}`, "Idempotency-Key", "order-1").status
			}()
		}
		wg.Wait()
		count := map[int]int{}
		for _, c := range codes {
			count[c]++
		}
		if count[200] != 1 || count[409] != n-1 {
			t.Fatalf("codes = %v", count)
		}
		if got, _ := s.app.Events.Count(context.Background(), s.team, "purchase"); got != 1 {
			t.Fatalf("events stored = %d", got)
		}
	})
}

func TestAPITenantIsolation(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := start(t, url, nil)
		other, _ := s.newKey(t, "Other")
		expect(t, s.do(t, "POST", "/api/v1/contacts/create", `{"email":"mine@example.com","userId":"m1"}`), 200)
		expect(t, s.do(t, "POST", "/api/v1/contacts/properties", `{"name":"secret","type":"string"}`), 200)
		expect(t, s.doKey(t, other, "GET", "/api/v1/api-key", ""), 200, "Other")
		expect(t, s.doKey(t, other, "GET", "/api/v1/contacts/find?email=mine%40example.com", ""), 200, "[]")
		expect(t, s.doKey(t, other, "GET", "/api/v1/contacts/find?userId=m1", ""), 200, "[]")
		expect(t, s.doKey(t, other, "POST", "/api/v1/contacts/delete", `{"userId":"m1"}`), 404)
		expect(t, s.doKey(t, other, "GET", "/api/v1/contacts/suppression?email=mine%40example.com", ""), 404)
		r := s.doKey(t, other, "GET", "/api/v1/contacts/properties?list=custom", "")
		expect(t, r, 200, "[]")
		expect(t, s.do(t, "GET", "/api/v1/contacts/find?email=mine%40example.com", ""), 200, "mine@example.com")
	})
}

// TestMigrateConcurrently starts several nodes at once on one empty
// PostgreSQL schema: the advisory lock lets exactly one migrate while the
// others wait, and all of them come up.
func TestMigrateConcurrently(t *testing.T) {
	url := testdb.URL(t, "postgres")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := app.Open(context.Background(), app.Config{DatabaseURL: url, DataDir: t.TempDir()}, nil)
			if err == nil {
				a.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
