package dashboard_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/app"
	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/dashboard"
	"github.com/lasso-mail/lasso/internal/delivery/deliverytest"
	"github.com/lasso-mail/lasso/internal/ids"
	"github.com/lasso-mail/lasso/internal/testclock"
	"github.com/lasso-mail/lasso/internal/testdb"
)

type env struct {
	app   *app.App
	url   string
	clock *testclock.Clock
}

func start(t *testing.T, dbURL string, mutate func(*app.Config)) *env {
	t.Helper()
	clk := testclock.New(time.Now())
	cfg := app.Config{DatabaseURL: dbURL, DataDir: t.TempDir(), RateLimit: -1, Now: clk.Now, WebhookAllowPrivate: true}
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
	t.Cleanup(func() {
		srv.Close()
		_ = a.Queue.Stop(context.Background())
		a.Close()
	})
	return &env{app: a, url: srv.URL, clock: clk}
}

// browser is a cookie-keeping client that does not follow redirects.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
}

func (e *env) browser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: e.url, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

type page struct {
	status   int
	body     string
	location string
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	p := page{status: res.StatusCode, body: string(body), location: res.Header.Get("Location")}
	if m := csrfRe.FindStringSubmatch(p.body); m != nil {
		b.csrf = m[1]
	}
	return p
}

func (b *browser) get(path string) page {
	b.t.Helper()
	req, _ := http.NewRequest("GET", b.base+path, nil)
	return b.do(req)
}

// post sends a form with the current CSRF token (unless the form sets one).
func (b *browser) post(path string, form url.Values, hdr ...string) page {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", b.csrf)
	}
	req, _ := http.NewRequest("POST", b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return b.do(req)
}

func want(t *testing.T, p page, status int, fragments ...string) {
	t.Helper()
	if p.status != status {
		t.Fatalf("status %d, want %d: %.600s", p.status, status, p.body)
	}
	for _, f := range fragments {
		if !strings.Contains(p.body, f) {
			t.Fatalf("page lacks %q: %.2000s", f, p.body)
		}
	}
}

const password = "correct horse battery"

// setup creates the first team and owner through the setup URL.
func (e *env) setup(t *testing.T, team, email string) *browser {
	t.Helper()
	u, err := e.app.Dashboard.SetupURL(context.Background())
	if err != nil || u == "" {
		t.Fatalf("setup url: %q %v", u, err)
	}
	tok := u[strings.Index(u, "token=")+len("token="):]
	tok, _ = url.QueryUnescape(tok)
	b := e.browser(t)
	want(t, b.get("/setup?token="+url.QueryEscape(tok)), 200, "Create team")
	p := b.post("/setup", url.Values{"token": {tok}, "team": {team}, "name": {"Owner"}, "email": {email}, "password": {password}, "password2": {password}})
	if p.status != http.StatusSeeOther || p.location != "/" {
		t.Fatalf("setup: %d %s %.500s", p.status, p.location, p.body)
	}
	want(t, b.get("/"), 200, "Overview", team)
	return b
}

// userIn creates a team with one user directly and logs them in.
func (e *env) userIn(t *testing.T, team, email string) (*browser, string) {
	t.Helper()
	ctx := context.Background()
	tm, err := e.app.Accounts.EnsureTeam(ctx, team)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.app.DB.Exec(ctx, `INSERT INTO users (id, team_id, email, name, password_hash, role, created_at) VALUES ($1, $2, $3, '', $4, 'owner', $5)`,
		ids.New(), tm.ID, email, dashboard.HashPassword(password), time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	b := e.browser(t)
	b.login(email, password, http.StatusSeeOther)
	return b, tm.ID
}

func (b *browser) login(email, pw string, status int) page {
	b.t.Helper()
	b.get("/login")
	p := b.post("/login", url.Values{"email": {email}, "password": {pw}})
	if p.status != status {
		b.t.Fatalf("login %s: status %d, want %d: %.500s", email, p.status, status, p.body)
	}
	return p
}

func TestSetupLoginLogout(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := start(t, dbURL, nil)
		anon := e.browser(t)
		// Before setup, every page leads to the explanation.
		p := anon.get("/keys")
		if p.status != http.StatusSeeOther || !strings.HasPrefix(p.location, "/login") {
			t.Fatalf("anonymous /keys: %d %s", p.status, p.location)
		}
		want(t, anon.get("/login"), 200, "setup link")
		want(t, anon.get("/setup?token=nope"), 404)

		b := e.setup(t, "Acme", "owner@example.com")
		if u, _ := e.app.Dashboard.SetupURL(context.Background()); u != "" {
			t.Fatalf("setup url after setup: %q", u)
		}
		// The session cookie is HttpOnly and SameSite=Lax.
		req, _ := http.NewRequest("GET", e.url+"/login", nil)
		res, _ := http.DefaultClient.Do(req)
		res.Body.Close()
		for _, c := range res.Cookies() {
			if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
				t.Fatalf("cookie %s: HttpOnly=%v SameSite=%v", c.Name, c.HttpOnly, c.SameSite)
			}
		}

		want(t, b.post("/logout", nil), http.StatusSeeOther)
		if p := b.get("/"); p.status != http.StatusSeeOther {
			t.Fatalf("after logout: %d", p.status)
		}
		want(t, b.login("owner@example.com", "wrong password!", http.StatusUnauthorized), 401, "Wrong email address or password")
		b.login("OWNER@example.com", password, http.StatusSeeOther)
		want(t, b.get("/"), 200, "Acme")

		// Invitations: the owner invites, the invitee joins the same team.
		p = b.post("/team/invites", url.Values{"email": {"bob@example.com"}, "role": {"member"}})
		want(t, p, 200, "/invite/")
		link := regexp.MustCompile(`/invite/[A-Za-z0-9_-]+`).FindString(p.body)
		bob := e.browser(t)
		want(t, bob.get(link), 200, "Join Acme", "bob@example.com")
		p = bob.post(link, url.Values{"name": {"Bob"}, "password": {password}, "password2": {password}})
		want(t, p, http.StatusSeeOther)
		want(t, bob.get("/team"), 200, "owner@example.com", "bob@example.com")
		want(t, e.browser(t).get(link), 404) // used once
		// Members cannot invite.
		want(t, bob.post("/team/invites", url.Values{"email": {"eve@example.com"}}), 403)
	})
}

// TestPruneSessions deletes sessions that expired without their cookie
// coming back; live sessions keep working.
func TestPruneSessions(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := start(t, dbURL, nil)
		e.setup(t, "Acme", "owner@example.com")
		e.browser(t).login("owner@example.com", password, http.StatusSeeOther)
		e.clock.Advance(15 * 24 * time.Hour) // past the 14-day session life
		live := e.browser(t)
		live.login("owner@example.com", password, http.StatusSeeOther)
		n, err := e.app.Dashboard.PruneSessions(context.Background())
		if err != nil || n != 2 {
			t.Fatalf("pruned %d: %v", n, err)
		}
		var left int
		if err := e.app.DB.QueryRow(context.Background(), `SELECT count(*) FROM sessions`).Scan(&left); err != nil || left != 1 {
			t.Fatalf("%d sessions left: %v", left, err)
		}
		want(t, live.get("/"), 200, "Acme")
	})
}

func TestCSRF(t *testing.T) {
	e := start(t, testdb.URL(t, "sqlite"), nil)
	b := e.setup(t, "Acme", "owner@example.com")
	b.get("/keys")
	good := b.csrf

	want(t, b.post("/keys", url.Values{"name": {"x"}, "csrf": {""}}), 403)
	want(t, b.post("/keys", url.Values{"name": {"x"}, "csrf": {"forged"}}), 403)
	// htmx sends the token as a header.
	want(t, b.post("/keys", url.Values{"name": {"via header"}, "csrf": {""}}, "X-CSRF-Token", good), 200, "via header")
	// A cross-origin request is refused even with the right token.
	want(t, b.post("/keys", url.Values{"name": {"x"}}, "Sec-Fetch-Site", "cross-site"), 403)
	// Login itself needs the pre-session token.
	anon := e.browser(t)
	want(t, anon.post("/login", url.Values{"email": {"owner@example.com"}, "password": {password}, "csrf": {"x"}}), 403)
	// A session token from another browser is not valid here.
	other := e.browser(t)
	other.login("owner@example.com", password, http.StatusSeeOther)
	want(t, other.post("/keys", url.Values{"name": {"x"}, "csrf": {good}}), 403)
	// An upload without a token is refused before the file is read.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "a.csv")
	fw.Write([]byte("email\na@b.co\n"))
	mw.Close()
	req, _ := http.NewRequest("POST", e.url+"/imports", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	want(t, b.do(req), 403)
}

func TestLoginThrottling(t *testing.T) {
	e := start(t, testdb.URL(t, "sqlite"), nil)
	e.setup(t, "Acme", "owner@example.com")
	b := e.browser(t)
	for i := 0; i < 5; i++ {
		b.login("owner@example.com", fmt.Sprintf("wrong %d password", i), http.StatusUnauthorized)
	}
	// Locked: even the right password is refused for the window.
	want(t, b.login("owner@example.com", password, http.StatusTooManyRequests), 429, "Too many failed attempts")
	e.clock.Advance(16 * time.Minute)
	b.login("owner@example.com", password, http.StatusSeeOther)

	// Per client address: many accounts from one IP are throttled too.
	c := e.browser(t)
	for i := 0; i < 20; i++ {
		c.login(fmt.Sprintf("nobody%d@example.com", i), "whatever password", http.StatusUnauthorized)
	}
	c.login("owner@example.com", password, http.StatusTooManyRequests)
}

func TestTenantIsolation(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := start(t, dbURL, nil)
		ctx := context.Background()
		a := e.setup(t, "Acme", "a@example.com")
		b, teamB := e.userIn(t, "Beta", "b@example.com")

		// Team B's data.
		list, err := e.app.Contacts.CreateList(ctx, teamB, "Beta news", "", false)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.app.Contacts.Update(ctx, teamB, contacts.Upsert{Email: "secret@beta.example"})
		if err != nil {
			t.Fatal(err)
		}
		dom, err := e.app.Senders.Add(ctx, teamB, "beta.example", false)
		if err != nil {
			t.Fatal(err)
		}
		keyB, k, err := e.app.Accounts.CreateKey(ctx, teamB, "beta key")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.app.Webhooks.Set(ctx, teamB, "http://127.0.0.1:9/hook", nil); err != nil {
			t.Fatal(err)
		}
		want(t, b.get("/lists"), 200, "Beta news")
		want(t, b.get("/contacts/"+res.ID), 200, "secret@beta.example")

		// Team A sees none of it and can change none of it.
		a.get("/")
		for _, path := range []string{"/lists", "/contacts", "/domains", "/keys", "/webhooks", "/contacts?q=secret"} {
			p := a.get(path)
			want(t, p, 200)
			for _, leak := range []string{"Beta news", "secret@beta.example", "beta.example", "beta key", k.Prefix, "127.0.0.1:9"} {
				if strings.Contains(p.body, leak) {
					t.Fatalf("%s shows team B's %q", path, leak)
				}
			}
		}
		want(t, a.get("/contacts/"+res.ID), 404)
		want(t, a.get("/domains/"+dom.ID), 404)
		want(t, a.post("/domains/"+dom.ID+"/verify", nil), 404)
		want(t, a.get("/lists/"+list.ID+"/edit"), 404)
		want(t, a.post("/lists/"+list.ID, url.Values{"name": {"pwned"}}), 404)
		want(t, a.post("/lists/"+list.ID+"/delete", nil), 404)
		want(t, a.post("/keys/"+k.ID+"/revoke", nil), 404)
		want(t, a.post("/contacts/"+res.ID+"/unsuppress", nil), 404)
		if _, err := e.app.Accounts.Authenticate(ctx, keyB); err != nil {
			t.Fatalf("team B's key was revoked by team A: %v", err)
		}
		if l, err := e.app.Contacts.GetList(ctx, teamB, list.ID); err != nil || l.Name != "Beta news" {
			t.Fatalf("team B's list changed: %+v %v", l, err)
		}
		// Team A's webhook secret is its own (none configured: 404).
		want(t, a.post("/webhooks/secret", nil), 404)
	})
}

func TestKeysListsWebhooks(t *testing.T) {
	e := start(t, testdb.URL(t, "sqlite"), nil)
	b := e.setup(t, "Acme", "owner@example.com")
	b.get("/keys")
	p := b.post("/keys", url.Values{"name": {"Production"}})
	want(t, p, 200, "shown only once", "Production")
	key := regexp.MustCompile(`lso_[0-9a-f]{40}`).FindString(p.body)
	if key == "" {
		t.Fatal("no key shown")
	}
	req, _ := http.NewRequest("GET", e.url+"/api/v1/api-key", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("api with new key: %v %v", res, err)
	}
	res.Body.Close()
	if strings.Contains(b.get("/keys").body, key) {
		t.Fatal("the key is shown again")
	}
	keys, _ := e.app.Accounts.ListKeys(context.Background(), "")
	want(t, b.post("/keys/"+keys[0].ID+"/revoke", nil), http.StatusSeeOther)
	want(t, b.get("/keys"), 200, "revoked")

	// Lists: create, edit inline (htmx), delete.
	want(t, b.post("/lists", url.Values{"name": {""}}), 422, "A list name is required")
	want(t, b.post("/lists", url.Values{"name": {"Newsletter"}, "description": {"Monthly"}, "public": {"on"}}), http.StatusSeeOther)
	lists, _ := e.app.Contacts.Lists(context.Background(), keys[0].TeamID)
	if len(lists) != 1 || !lists[0].IsPublic {
		t.Fatalf("lists: %+v", lists)
	}
	want(t, b.get("/lists/"+lists[0].ID+"/edit"), 200, `value="Newsletter"`)
	want(t, b.post("/lists/"+lists[0].ID, url.Values{"name": {"Weekly"}}, "HX-Request", "true"), 200, "Weekly", "private")
	want(t, b.post("/lists/"+lists[0].ID+"/delete", nil, "HX-Request", "true"), 200)
	if l, _ := e.app.Contacts.Lists(context.Background(), keys[0].TeamID); len(l) != 0 {
		t.Fatalf("list not deleted: %+v", l)
	}

	// Webhooks: configure, reveal, rotate, test event delivered.
	var got sync.WaitGroup
	got.Add(1)
	var once sync.Once
	var idsMu sync.Mutex
	var hookIDs []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("webhook-signature") != "" {
			idsMu.Lock()
			hookIDs = append(hookIDs, r.Header.Get("webhook-id"))
			idsMu.Unlock()
			once.Do(got.Done)
		}
	}))
	defer hook.Close()
	want(t, b.post("/webhooks", url.Values{"url": {"ftp://nope"}}), 422, "http(s) URL")
	want(t, b.post("/webhooks", url.Values{"url": {hook.URL}, "events": {"testing.testEvent", "contact.created"}}), http.StatusSeeOther)
	want(t, b.get("/webhooks"), 200, hook.URL, `value="testing.testEvent" checked`)
	p = b.post("/webhooks/secret", nil, "HX-Request", "true")
	want(t, p, 200, "whsec_")
	p2 := b.post("/webhooks/rotate", nil, "HX-Request", "true")
	want(t, p2, 200, "whsec_", "rotated")
	if p.body == p2.body {
		t.Fatal("secret not rotated")
	}
	want(t, b.post("/webhooks/test", nil, "HX-Request", "true"), 200, "testing.testEvent")
	done := make(chan struct{})
	go func() { got.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("test event not delivered")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(b.get("/webhooks/log").body, `data-status="delivered"`) {
		if time.Now().After(deadline) {
			t.Fatal("delivery log does not show the delivery")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Retry from the log: delivered again with the same webhook-id.
	m := regexp.MustCompile(`/webhooks/retry/(msg_[a-z0-9]+)`).FindStringSubmatch(b.get("/webhooks/log").body)
	if m == nil {
		t.Fatal("no retry button in the log")
	}
	want(t, b.post("/webhooks/retry/"+m[1], nil, "HX-Request", "true"), 200)
	want(t, b.post("/webhooks/retry/msg_nope", nil, "HX-Request", "true"), 404)
	deadline = time.Now().Add(10 * time.Second)
	for {
		idsMu.Lock()
		n := len(hookIDs)
		same := n >= 2 && hookIDs[n-1] == m[1] && hookIDs[0] == m[1]
		idsMu.Unlock()
		if same {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retry not delivered with the same id: %v", hookIDs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestDomainVerification(t *testing.T) {
	dns := deliverytest.NewDNS(t)
	e := start(t, testdb.URL(t, "sqlite"), func(c *app.Config) { c.DNSServer = dns.Addr; c.PublicURL = "https://mail.lasso.test" })
	b := e.setup(t, "Acme", "owner@example.com")
	b.get("/domains")
	want(t, b.post("/domains", url.Values{"domain": {"not a domain"}}), 422, "Invalid domain")
	p := b.post("/domains", url.Values{"domain": {"Example.COM"}})
	want(t, p, http.StatusSeeOther)
	p = b.get(p.location)
	want(t, p, 200, "up to an hour", "v=spf1", "v=DKIM1", "v=DMARC1", "bounces.example.com")
	id := strings.TrimPrefix(regexp.MustCompile(`/domains/[a-z0-9]+/verify`).FindString(p.body), "/domains/")
	id = strings.TrimSuffix(id, "/verify")

	// Nothing published: every record is missing.
	p = b.post("/domains/"+id+"/verify", nil, "HX-Request", "true")
	want(t, p, 200, `data-status="missing"`, "not verified")
	if strings.Contains(p.body, `data-status="ok"`) {
		t.Fatal("a record is ok with nothing published")
	}

	doms, _ := e.app.Senders.Domains(context.Background(), "")
	_ = doms
	tm, _ := e.app.Accounts.TeamByName(context.Background(), "Acme")
	ds, _ := e.app.Senders.Domains(context.Background(), tm.ID)
	recs, err := e.app.Senders.Records(ds[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		switch r.Type {
		case "TXT":
			if r.Purpose == "SPF" {
				dns.SetTXT(r.Name, "google-site-verification=abc", "v=spf1 include:_spf.example.net "+strings.Fields(r.Value)[1]+" -all")
			} else if r.Purpose == "DKIM" {
				dns.SetTXT(r.Name, "v=DKIM1; k=rsa; p=AAAAwrongkey")
			} else {
				dns.SetTXT(r.Name, r.Value)
			}
		case "MX":
			dns.SetMX(r.Name, deliverytest.MX{Host: strings.Fields(r.Value)[1], Pref: 10})
		}
	}
	p = b.post("/domains/"+id+"/verify", nil, "HX-Request", "true")
	want(t, p, 200, `data-status="mismatch"`, "public key (p=) differs")
	if n := strings.Count(p.body, `data-status="ok"`); n != 4 {
		t.Fatalf("%d records ok, want 4: %s", n, p.body)
	}
	for _, r := range recs {
		if r.Purpose == "DKIM" {
			dns.SetTXT(r.Name, r.Value)
		}
	}
	p = b.post("/domains/"+id+"/verify", nil, "HX-Request", "true")
	want(t, p, 200, "This domain can send")
	ds, _ = e.app.Senders.Domains(context.Background(), tm.ID)
	if !ds[0].Verified || ds[0].VerifiedAt == nil {
		t.Fatalf("domain not stored verified: %+v", ds[0])
	}
	// A temporary DNS failure does not unverify it.
	for _, r := range recs {
		dns.SetServFail(r.Name, true)
	}
	want(t, b.post("/domains/"+id+"/verify", nil, "HX-Request", "true"), 200, `data-status="error"`)
	ds, _ = e.app.Senders.Domains(context.Background(), tm.ID)
	if !ds[0].Verified {
		t.Fatal("a SERVFAIL unverified the domain")
	}
	// The last check is shown on the page.
	want(t, b.get("/domains/"+id), 200, "Last checked", `data-status="error"`)
}

func TestContactsPagination(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := start(t, dbURL, nil)
		b := e.setup(t, "Acme", "owner@example.com")
		tm, _ := e.app.Accounts.TeamByName(context.Background(), "Acme")
		list, _ := e.app.Contacts.CreateList(context.Background(), tm.ID, "Even", "", false)
		const n = 130
		for i := range n {
			in := contacts.Upsert{Email: fmt.Sprintf("user%03d@example.com", i)}
			if i%2 == 0 {
				in.MailingLists = map[string]bool{list.ID: true}
			}
			if i%10 == 0 {
				e.clock.Advance(time.Millisecond) // ties and distinct times both occur
			}
			if _, err := e.app.Contacts.Update(context.Background(), tm.ID, in); err != nil {
				t.Fatal(err)
			}
		}
		emailRe := regexp.MustCompile(`user\d{3}@example\.com`)
		nextRe := regexp.MustCompile(`href="(/contacts\?[^"]*after=[^"]*)" rel="next"`)
		walk := func(first string) []string {
			var all []string
			path := first
			for pages := 0; path != ""; pages++ {
				if pages > 10 {
					t.Fatal("too many pages")
				}
				p := b.get(path)
				want(t, p, 200)
				all = append(all, emailRe.FindAllString(p.body, -1)...)
				path = ""
				if m := nextRe.FindStringSubmatch(p.body); m != nil {
					path = strings.ReplaceAll(m[1], "&amp;", "&")
				}
			}
			return all
		}
		seen := map[string]bool{}
		all := walk("/contacts")
		for _, e := range all {
			if seen[e] {
				t.Fatalf("%s listed twice", e)
			}
			seen[e] = true
		}
		if len(seen) != n {
			t.Fatalf("walked %d contacts, want %d", len(seen), n)
		}
		if got := walk("/contacts?list=" + list.ID); len(got) != n/2 {
			t.Fatalf("list filter: %d, want %d", len(got), n/2)
		}
		if got := walk("/contacts?q=USER12"); len(got) != 10 {
			t.Fatalf("search: %d (%v)", len(got), got)
		}
		want(t, b.get("/contacts?after=!!"), 400)
	})
}

func TestCSVImport(t *testing.T) {
	e := start(t, testdb.URL(t, "sqlite"), nil)
	b := e.setup(t, "Acme", "owner@example.com")
	tm, _ := e.app.Accounts.TeamByName(context.Background(), "Acme")
	list, _ := e.app.Contacts.CreateList(context.Background(), tm.ID, "Imported", "", false)
	if _, err := e.app.Contacts.Update(context.Background(), tm.ID, contacts.Upsert{Email: "existing@example.com"}); err != nil {
		t.Fatal(err)
	}
	var csv strings.Builder
	csv.WriteString("\ufeffEmail,First Name,Plan,Seats\n")
	for i := range 300 {
		switch {
		case i%50 == 7:
			fmt.Fprintf(&csv, "not-an-email,Bad,pro,1\n")
		case i%50 == 9:
			fmt.Fprintf(&csv, "seat%d@example.com,Bad,pro,many\n", i)
		default:
			fmt.Fprintf(&csv, "person%d@example.com,P%d,pro,%d\n", i, i, i)
		}
	}
	csv.WriteString("existing@example.com,Old,basic,2\n")

	b.get("/imports")
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("csrf", b.csrf)
	fw, _ := mw.CreateFormFile("file", "people.csv")
	fw.Write([]byte(csv.String()))
	mw.Close()
	req, _ := http.NewRequest("POST", e.url+"/imports", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	p := b.do(req)
	want(t, p, http.StatusSeeOther)
	importPath := p.location
	p = b.get(importPath)
	want(t, p, 200, "person0@example.com", `<option value="email" selected>`, `<option value="firstName" selected>`)

	want(t, b.post(importPath+"/start", url.Values{"col0": {""}}), 422, "Map one column to Email")
	p = b.post(importPath+"/start", url.Values{"col0": {"email"}, "col1": {"firstName"}, "col2": {"_new"}, "new2": {"plan"}, "newtype2": {"string"},
		"col3": {"_new"}, "new3": {"seats"}, "newtype3": {"number"}, "lists": {list.ID}})
	want(t, p, http.StatusSeeOther)
	deadline := time.Now().Add(30 * time.Second)
	for {
		p = b.get(importPath + "/progress")
		if strings.Contains(p.body, `data-status="done"`) {
			break
		}
		if strings.Contains(p.body, `data-status="failed"`) || time.Now().After(deadline) {
			t.Fatalf("import: %s", p.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	want(t, p, 200, `data-testid="created">288<`, `data-testid="updated">1<`, `data-testid="skipped">12<`, "errors.csv")
	p = b.get(importPath + "/errors.csv")
	want(t, p, 200, "line,reason,Email", "Invalid email address", `seats: ""many"" is not a number`)
	if n := strings.Count(p.body, "\n"); n != 13 {
		t.Fatalf("error file has %d lines: %s", n, p.body)
	}
	c, err := e.app.Contacts.Find(context.Background(), tm.ID, contacts.Identity{Email: "person10@example.com"})
	if err != nil || c == nil || c.Custom["plan"] != "pro" || len(c.MailingLists) != 1 {
		t.Fatalf("imported contact: %+v %v", c, err)
	}
}
