package app_test

import (
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

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/lasso-mail/lasso/internal/app"
	"github.com/lasso-mail/lasso/internal/testclock"
	"github.com/lasso-mail/lasso/internal/testdb"
)

type received struct {
	id    string
	at    time.Time
	body  map[string]any
	valid bool
}

// receiver is a webhook endpoint that records what it gets; fail makes it
// answer 500 to the first n deliveries.
type receiver struct {
	mu     sync.Mutex
	secret string
	got    []received
	fail   int
}

func (rc *receiver) handler(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	wh, _ := standardwebhooks.NewWebhook(rc.secret)
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	rc.got = append(rc.got, received{id: r.Header.Get("webhook-id"), at: time.Now(), body: body, valid: wh != nil && wh.Verify(b, r.Header) == nil})
	if rc.fail > 0 {
		rc.fail--
		w.WriteHeader(500)
		return
	}
	w.WriteHeader(204)
}

func (rc *receiver) wait(t *testing.T, n int) []received {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		rc.mu.Lock()
		if len(rc.got) >= n {
			out := append([]received(nil), rc.got...)
			rc.mu.Unlock()
			return out
		}
		rc.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	t.Fatalf("got %d webhooks, want %d", len(rc.got), n)
	return nil
}

func TestContactWebhooks(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := start(t, url, func(c *app.Config) { c.WebhookRetrySchedule = []time.Duration{100 * time.Millisecond} })
		rc := &receiver{fail: 1}
		hook := httptest.NewServer(http.HandlerFunc(rc.handler))
		defer hook.Close()
		ep, err := s.app.Webhooks.Set(context.Background(), s.team, hook.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		rc.secret = ep.Secret
		l, _ := s.app.Contacts.CreateList(context.Background(), s.team, "News", "", true)
		expect(t, s.do(t, "POST", "/api/v1/contacts/properties", `{"name":"color","type":"string"}`), 200)
		expect(t, s.do(t, "POST", "/api/v1/contacts/create", fmt.Sprintf(`{"email":"w@example.com","color":"blue","mailingLists":{"%s":true}}`, l.ID)), 200)
		// The first delivery fails with 500 and is retried with the same id.
		got := rc.wait(t, 3)
		byEvent := map[string][]received{}
		for _, g := range got {
			if !g.valid {
				t.Fatalf("bad signature on %v", g.body)
			}
			byEvent[g.body["eventName"].(string)] = append(byEvent[g.body["eventName"].(string)], g)
		}
		created := byEvent["contact.created"]
		sub := byEvent["contact.mailingList.subscribed"]
		if len(created)+len(sub) != 3 {
			t.Fatalf("events: %v", byEvent)
		}
		retried := created
		if len(sub) == 2 {
			retried = sub
		}
		if len(retried) != 2 || retried[0].id != retried[1].id {
			t.Fatalf("retry did not reuse webhook-id: %+v", retried)
		}
		c := created[0].body
		contact := c["contact"].(map[string]any)
		if c["webhookSchemaVersion"] != "1.0.0" || c["eventTime"] == nil || contact["email"] != "w@example.com" || contact["color"] != "blue" ||
			c["contactIdentity"].(map[string]any)["email"] != "w@example.com" {
			t.Fatalf("contact.created payload: %v", c)
		}
		if ml := sub[0].body["mailingList"].(map[string]any); ml["id"] != l.ID || ml["name"] != "News" || ml["isPublic"] != true {
			t.Fatalf("mailingList payload: %v", sub[0].body)
		}

		expect(t, s.do(t, "PUT", "/api/v1/contacts/update", `{"email":"w@example.com","subscribed":false}`), 200)
		got = rc.wait(t, 4)
		if got[3].body["eventName"] != "contact.unsubscribed" {
			t.Fatalf("want contact.unsubscribed, got %v", got[3].body)
		}
		expect(t, s.do(t, "POST", "/api/v1/contacts/delete", `{"email":"w@example.com"}`), 200)
		got = rc.wait(t, 6)
		names := map[string]bool{}
		for _, g := range got[4:] {
			names[g.body["eventName"].(string)] = true
		}
		if !names["contact.deleted"] || !names["contact.unsubscribed"] {
			t.Fatalf("delete webhooks: %v", names)
		}
		// The history records each message as delivered (written just after
		// the receiver answered, so poll briefly).
		deadline := time.Now().Add(10 * time.Second)
		for {
			msgs, err := s.app.Webhooks.Messages(context.Background(), s.team, 50)
			if err != nil {
				t.Fatal(err)
			}
			pending := ""
			for _, m := range msgs {
				if m.Status != "delivered" {
					pending = m.ID + " " + m.Event + " " + m.Status
				}
			}
			if len(msgs) == 5 && pending == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d messages, not delivered: %s", len(msgs), pending)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// TestWebhookRate sends 25 test events at once: a team gets at most 10
// deliveries per second, so they take at least ~1.5 s to arrive.
func TestWebhookRate(t *testing.T) {
	s := start(t, testdb.URL(t, "sqlite"), nil)
	rc := &receiver{}
	hook := httptest.NewServer(http.HandlerFunc(rc.handler))
	defer hook.Close()
	ep, err := s.app.Webhooks.Set(context.Background(), s.team, hook.URL, []string{"testing.testEvent"})
	if err != nil {
		t.Fatal(err)
	}
	rc.secret = ep.Secret
	for range 25 {
		if err := s.app.Webhooks.SendTest(context.Background(), s.team); err != nil {
			t.Fatal(err)
		}
	}
	got := rc.wait(t, 25)
	for i := 10; i < len(got); i++ {
		if d := got[i].at.Sub(got[i-10].at); d < 900*time.Millisecond {
			t.Fatalf("11 deliveries within %v", d)
		}
	}
	if got[0].body["message"] != "test" || got[0].body["contactIdentity"] != nil {
		t.Fatalf("test event: %v", got[0].body)
	}
}

// TestWebhookPrune keeps 30 days of delivery history: older messages go
// with their attempts, in batches, and a delivery job whose message was
// pruned ends quietly.
func TestWebhookPrune(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		clock := testclock.New(time.Now())
		s := start(t, url, func(c *app.Config) { c.Now = clock.Now })
		rc := &receiver{}
		hook := httptest.NewServer(http.HandlerFunc(rc.handler))
		defer hook.Close()
		if _, err := s.app.Webhooks.Set(context.Background(), s.team, hook.URL, []string{"testing.testEvent"}); err != nil {
			t.Fatal(err)
		}
		send := func(n int) {
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for w := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < n; i += 8 {
						errs <- s.app.Webhooks.SendTest(context.Background(), s.team)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		count := func(q string) int {
			var n int
			if err := s.app.DB.QueryRow(context.Background(), q).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		send(1050) // more than one pruning batch
		rc.wait(t, 5)
		if count(`SELECT count(*) FROM webhook_attempts`) == 0 {
			t.Fatal("no attempts recorded")
		}
		clock.Advance(29 * 24 * time.Hour)
		send(5)
		clock.Advance(2 * 24 * time.Hour) // the first 1050 are now 31 days old

		n, err := s.app.Webhooks.Prune(context.Background())
		if err != nil || n != 1050 {
			t.Fatalf("pruned %d: %v", n, err)
		}
		if got := count(`SELECT count(*) FROM webhook_messages`); got != 5 {
			t.Fatalf("%d messages left, want 5", got)
		}
		if got := count(`SELECT count(*) FROM webhook_attempts a WHERE NOT EXISTS (SELECT 1 FROM webhook_messages m WHERE m.id = a.message_id)`); got != 0 {
			t.Fatalf("%d attempts of pruned messages left", got)
		}
		if n, err := s.app.Webhooks.Prune(context.Background()); err != nil || n != 0 {
			t.Fatalf("second prune: %d %v", n, err)
		}
		// The 5 recent messages are still delivered, after the pruned ones'
		// jobs have ended (the endpoint gets 10 per second).
		deadline := time.Now().Add(30 * time.Second)
		for count(`SELECT count(*) FROM webhook_messages WHERE status = 'delivered'`) < 5 {
			if time.Now().After(deadline) {
				t.Fatal("recent messages not delivered after pruning")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// TestWebhookPublicOnly: by default a webhook cannot reach a loopback
// address (nor any private one): the attempt fails with an error that says
// why and how to allow it, and the receiver gets nothing.
func TestWebhookPublicOnly(t *testing.T) {
	s := start(t, testdb.URL(t, "sqlite"), func(c *app.Config) {
		c.WebhookAllowPrivate = false
		c.WebhookRetrySchedule = []time.Duration{time.Hour}
	})
	rc := &receiver{}
	hook := httptest.NewServer(http.HandlerFunc(rc.handler))
	defer hook.Close()
	if _, err := s.app.Webhooks.Set(context.Background(), s.team, hook.URL, []string{"testing.testEvent"}); err != nil {
		t.Fatal(err)
	}
	if err := s.app.Webhooks.SendTest(context.Background(), s.team); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var errText *string
		err := s.app.DB.QueryRow(context.Background(), `SELECT error FROM webhook_attempts`).Scan(&errText)
		if err == nil && errText != nil {
			if !strings.Contains(*errText, "127.0.0.1: not a public address") || !strings.Contains(*errText, "--webhook-allow-private") {
				t.Fatalf("attempt error %q", *errText)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failed attempt recorded: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.got) != 0 {
		t.Fatalf("the loopback receiver got %d requests", len(rc.got))
	}
}
