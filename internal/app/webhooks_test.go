package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/lasso-mail/lasso/internal/app"
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
