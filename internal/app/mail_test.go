package app_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/smtp"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/app"
	"github.com/lasso-mail/lasso/internal/delivery/deliverytest"
	"github.com/lasso-mail/lasso/internal/emails"
	"github.com/lasso-mail/lasso/internal/testdb"
)

// serve runs App.Serve (HTTP, SMTP submission, bounce intake, workers) on
// free loopback ports, relaying to sink.
func serve(t *testing.T, url string, sink *deliverytest.Sink) *app.App {
	t.Helper()
	a, err := app.Open(context.Background(), app.Config{DatabaseURL: url, DataDir: t.TempDir(), RateLimit: -1, PublicURL: "https://lasso.test",
		HTTPAddr: "127.0.0.1:0", SMTPAddr: "127.0.0.1:0", BounceAddr: "127.0.0.1:0", Hostname: "mta.lasso.test",
		SMTPRelay: "smtp://" + sink.Addr + "?tls=none", WebhookAllowPrivate: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		a.Close()
	})
	for a.HTTPAddr() == nil || a.BounceAddr() == "" {
		time.Sleep(10 * time.Millisecond)
	}
	return a
}

// submit sends one message over SMTP submission with STARTTLS and AUTH PLAIN.
func submit(t *testing.T, addr, key, body string) error {
	t.Helper()
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Hello("client.test"); err != nil {
		t.Fatal(err)
	}
	if err := c.StartTLS(&tls.Config{InsecureSkipVerify: true}); err != nil {
		t.Fatal(err)
	}
	if err := c.Auth(smtp.PlainAuth("", "loops", key, "127.0.0.1")); err != nil {
		return err
	}
	if err := c.Mail("app@client.test"); err != nil {
		return err
	}
	if err := c.Rcpt("ignored@client.test"); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "From: app@client.test\r\nTo: ignored@client.test\r\nSubject: x\r\nContent-Type: text/plain\r\n\r\n%s\r\n", body)
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

func TestSMTPSubmissionAndBounceIntake(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		sink := deliverytest.NewSink(t)
		a := serve(t, url, sink)
		ctx := context.Background()
		team, _ := a.Accounts.EnsureTeam(ctx, "Acme")
		key, _, _ := a.Accounts.CreateKey(ctx, team.ID, "smtp")
		if _, err := a.Senders.Add(ctx, team.ID, "example.com", true); err != nil {
			t.Fatal(err)
		}
		s := &server{app: a, url: "http://" + a.HTTPAddr().String(), key: key, team: team.ID}
		id := publishTemplate(t, s, "Confirm", `<Paragraph>Confirm: {data.confirmationUrl}</Paragraph>`, `{}`)
		rc := &receiver{}
		hook := httptest.NewServer(http.HandlerFunc(rc.handler))
		defer hook.Close()
		ep, err := a.Webhooks.Set(ctx, team.ID, hook.URL, []string{"transactional.email.sent", "email.delivered", "email.hardBounced"})
		if err != nil {
			t.Fatal(err)
		}
		rc.secret = ep.Secret

		body := fmt.Sprintf(`{"transactionalId": %q, /* recipient */ "email": "dan@example.org", "dataVariables": {"confirmationUrl": "https://myapp.test/confirm/1"}}`, id)
		if err := submit(t, a.SMTPAddr(), key, body); err != nil {
			t.Fatalf("submit: %v", err)
		}
		m := sink.WaitMessages(t, 1, 15*time.Second)[0]
		if m.To[0] != "dan@example.org" || !bytes.Contains(m.Data, []byte("https://myapp.test/confirm/1")) {
			t.Fatalf("relayed %v %.200s", m.To, m.Data)
		}
		// Errors are SMTP replies carrying the HTTP error's message.
		err = submit(t, a.SMTPAddr(), key, fmt.Sprintf(`{"transactionalId": %q, "email": "dan@example.org"}`, id))
		if err == nil || !strings.Contains(err.Error(), "550") || !strings.Contains(err.Error(), "dataVariables") {
			t.Fatalf("missing variables: %v", err)
		}
		if err := submit(t, a.SMTPAddr(), "lso_wrong", body); err == nil || !strings.Contains(err.Error(), "535") {
			t.Fatalf("bad key: %v", err)
		}

		// A DSN for that send arrives at the return path: hard bounce.
		sendID := strings.TrimSuffix(strings.TrimPrefix(m.From, "bounce+"), "@bounces.example.com")
		dsn, err := os.ReadFile("../bounce/testdata/corpus/mail/lhost-postfix-04.eml")
		if err != nil {
			t.Fatal(err)
		}
		dsn = bytes.ReplaceAll(dsn, []byte("kijitora@example.co.jp"), []byte("dan@example.org"))
		if err := smtp.SendMail(a.BounceAddr(), nil, "", []string{m.From}, dsn); err != nil {
			t.Fatalf("bounce intake: %v", err)
		}
		waitStatus(t, s, sendID, emails.StatusHardBounced)
		if err := smtp.SendMail(a.BounceAddr(), nil, "", []string{"postmaster@example.com"}, dsn); err == nil {
			t.Fatal("intake accepted a non-VERP recipient")
		}
		// A complaint (ARF) arriving by SMTP for a second send.
		if err := submit(t, a.SMTPAddr(), key, fmt.Sprintf(`{"transactionalId": %q, "email": "redacted@example.net", "dataVariables": {"confirmationUrl": "x"}}`, id)); err != nil {
			t.Fatal(err)
		}
		m2 := sink.WaitMessages(t, 2, 15*time.Second)[1]
		arf, err := os.ReadFile("../bounce/testdata/corpus/mail/arf-01.eml")
		if err != nil {
			t.Fatal(err)
		}
		if err := smtp.SendMail(a.BounceAddr(), nil, "", []string{m2.From}, arf); err != nil {
			t.Fatalf("arf intake: %v", err)
		}
		waitStatus(t, s, strings.TrimSuffix(strings.TrimPrefix(m2.From, "bounce+"), "@bounces.example.com"), emails.StatusComplained)

		// Two sends (each sent + delivered) and one hard bounce.
		got := rc.wait(t, 5)
		names := map[string]map[string]any{}
		for _, g := range got {
			if !g.valid {
				t.Fatal("bad signature")
			}
			names[g.body["eventName"].(string)] = g.body
		}
		sent, hard := names["transactional.email.sent"], names["email.hardBounced"]
		if sent == nil || names["email.delivered"] == nil || hard == nil {
			t.Fatalf("webhooks: %v", names)
		}
		if sent["transactionalId"] != id || sent["transactionalName"] != "Welcome" || sent["email"].(map[string]any)["subject"] != "Confirm" ||
			hard["sourceType"] != "transactional" || hard["email"].(map[string]any)["id"] != sendID {
			t.Fatalf("payloads: %v / %v", sent, hard)
		}
	})
}

// marketingRenderer renders marketing mail with two links.
type marketingRenderer struct{}

func (marketingRenderer) Render(_ context.Context, x *emails.Send) (*emails.Rendered, error) {
	return &emails.Rendered{FromName: "Acme", FromEmail: "news@example.com", Subject: "News", Marketing: true,
		HTML: `<html><body><p><a href="https://acme.test/post?id=1">Read</a> <a href="mailto:x@acme.test">Mail us</a></p></body></html>`,
		Text: "Read https://acme.test/post?id=1"}, nil
}

func TestTrackingAndOneClickUnsubscribe(t *testing.T) {
	sink := deliverytest.NewSink(t)
	a := serve(t, testdb.URL(t, "sqlite"), sink)
	ctx := context.Background()
	team, _ := a.Accounts.EnsureTeam(ctx, "Acme")
	key, _, _ := a.Accounts.CreateKey(ctx, team.ID, "k")
	s := &server{app: a, url: "http://" + a.HTTPAddr().String(), key: key, team: team.ID}
	a.Emails.Register(emails.SourceCampaign, marketingRenderer{})
	rc := &receiver{}
	hook := httptest.NewServer(http.HandlerFunc(rc.handler))
	defer hook.Close()
	ep, err := a.Webhooks.Set(ctx, team.ID, hook.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc.secret = ep.Secret
	expect(t, s.do(t, "POST", "/api/v1/contacts/create", `{"email":"reader@example.org"}`), 200)
	id := enqueueSource(t, s, "reader@example.org", emails.SourceCampaign)
	waitStatus(t, s, id, emails.StatusDelivered)
	raw := string(sink.WaitMessages(t, 1, 10*time.Second)[0].Data)
	raw = strings.ReplaceAll(raw, "=\r\n", "")
	raw = strings.ReplaceAll(raw, "=3D", "=")
	if !strings.Contains(raw, "List-Unsubscribe-Post: List-Unsubscribe=One-Click") {
		t.Fatal("no one-click header")
	}
	unsub := regexp.MustCompile(`List-Unsubscribe: <([^>]+)>`).FindStringSubmatch(raw)
	click := regexp.MustCompile(`href="(` + regexp.QuoteMeta(a.PublicURL()) + `/t/c/[^"]+)"`).FindStringSubmatch(raw)
	pixel := regexp.MustCompile(`src="(` + regexp.QuoteMeta(a.PublicURL()) + `/t/o/[^"]+)"`).FindStringSubmatch(raw)
	if unsub == nil || click == nil || pixel == nil || !strings.Contains(raw, `href="mailto:x@acme.test"`) {
		t.Fatalf("tracking not applied:\n%s", raw)
	}
	base := "http://" + a.HTTPAddr().String()
	fix := func(u string) string {
		return strings.Replace(strings.ReplaceAll(u, "&amp;", "&"), a.PublicURL(), base, 1)
	}
	res, err := http.Get(fix(pixel[1]))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("pixel: %v %v", err, res)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err = noRedirect.Get(fix(click[1]))
	if err != nil || res.StatusCode != 302 || res.Header.Get("Location") != "https://acme.test/post?id=1" {
		t.Fatalf("click: %v %v", err, res)
	}
	x, _ := a.Emails.Get(ctx, a.DB, id)
	h := statuses(t, s, id)
	if !strings.Contains(h, "opened") || !strings.Contains(h, "clicked") {
		t.Fatalf("history %s (%s)", h, x.Status)
	}
	// GET never unsubscribes (mail clients prefetch); the RFC 8058 POST does.
	res, _ = http.Get(fix(unsub[1]))
	res.Body.Close()
	expect(t, s.do(t, "GET", "/api/v1/contacts/find?email=reader%40example.org", ""), 200, `"subscribed":true`)
	res, err = http.Post(fix(unsub[1]), "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("one-click: %v %v", err, res)
	}
	expect(t, s.do(t, "GET", "/api/v1/contacts/find?email=reader%40example.org", ""), 200, `"subscribed":false`)

	// The webhooks of the whole story, signed, with the contract's keys.
	want := []string{"contact.created", "campaign.email.sent", "email.delivered", "email.opened", "email.clicked", "contact.unsubscribed", "email.unsubscribed"}
	got := rc.wait(t, len(want))
	seen := map[string]map[string]any{}
	for _, g := range got {
		if !g.valid {
			t.Fatalf("bad signature: %v", g.body)
		}
		seen[g.body["eventName"].(string)] = g.body
	}
	for _, ev := range want {
		if seen[ev] == nil {
			t.Fatalf("no %s webhook; got %v", ev, seen)
		}
	}
	if b := seen["campaign.email.sent"]; b["campaignId"] != "src1" || b["campaignName"] != "Welcome" || b["email"].(map[string]any)["id"] != id || b["mailingLists"] == nil {
		t.Fatalf("campaign.email.sent: %v", b)
	}
	for _, ev := range []string{"email.delivered", "email.opened", "email.clicked", "email.unsubscribed"} {
		b := seen[ev]
		if b["sourceType"] != "campaign" || b["campaignId"] != "src1" || b["contactIdentity"].(map[string]any)["email"] != "reader@example.org" {
			t.Fatalf("%s: %v", ev, b)
		}
	}
}
