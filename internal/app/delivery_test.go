package app_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/app"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/delivery/deliverytest"
	"github.com/lasso-mail/lasso/internal/emails"
	"github.com/lasso-mail/lasso/internal/senders"
	"github.com/lasso-mail/lasso/internal/testdb"
)

// staticRenderer renders every send the same way: the pipeline tests below
// exercise delivery, not templates (those are tested with real content).
type staticRenderer struct{ from string }

func (r staticRenderer) Render(_ context.Context, x *emails.Send) (*emails.Rendered, error) {
	return &emails.Rendered{FromName: "Acme", FromEmail: r.from, Subject: "Hello " + x.Recipient,
		HTML: "<p>Hi</p>", Text: "Hi", EmailMessageID: "msg1"}, nil
}

// enqueue records one send for to, as a transactional email.
func enqueue(t *testing.T, s *server, to string) string {
	t.Helper()
	return enqueueSource(t, s, to, emails.SourceTransactional)
}

func enqueueSource(t *testing.T, s *server, to, source string) string {
	t.Helper()
	var id string
	err := s.app.DB.InTx(context.Background(), func(tx db.Tx) error {
		var err error
		id, err = s.app.Emails.Enqueue(context.Background(), tx, emails.New{TeamID: s.team, Recipient: to,
			SourceType: source, SourceID: "src1", SourceName: "Welcome"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func waitStatus(t *testing.T, s *server, id, want string) *emails.Send {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		x, err := s.app.Emails.Get(context.Background(), s.app.DB, id)
		if err != nil {
			t.Fatal(err)
		}
		if x.Status == want {
			return x
		}
		if time.Now().After(deadline) {
			h, _ := s.app.Emails.History(context.Background(), id)
			t.Fatalf("send %s is %s, want %s; history %+v", id, x.Status, want, h)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func statuses(t *testing.T, s *server, id string) string {
	h, err := s.app.Emails.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range h {
		out = append(out, e.Status)
	}
	return strings.Join(out, ",")
}

// publishDKIM puts the domain's DKIM records into the fake DNS.
func publishDKIM(t *testing.T, s *server, dns *deliverytest.DNS, d senders.Domain) {
	recs, err := s.app.Senders.Records(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Type == "TXT" {
			dns.SetTXT(r.Name, r.Value)
		}
	}
}

// requireMetrics checks the counters of the sends enqueue made.
func requireMetrics(t *testing.T, s *server, want emails.Metrics) {
	t.Helper()
	got, err := s.app.Emails.SourceMetrics(context.Background(), s.team, emails.SourceTransactional, "src1")
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("metrics %+v, want %+v", got, want)
	}
	other, err := s.app.Emails.SourceMetrics(context.Background(), s.team, emails.SourceCampaign, "src1")
	if err != nil || other != (emails.Metrics{}) {
		t.Fatalf("another source type: %+v %v", other, err)
	}
}

func TestRelayDelivery(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		sink := deliverytest.NewSink(t, deliverytest.SinkOpts{TLS: true, Username: "relayuser", Password: "relaypass"})
		s := start(t, url, func(c *app.Config) {
			c.SMTPRelay = fmt.Sprintf("smtp://relayuser:relaypass@%s?tls=required&insecure_skip_verify=true", sink.Addr)
			c.Hostname = "mta.lasso.test"
			c.SendRetrySchedule = []time.Duration{50 * time.Millisecond, 50 * time.Millisecond}
		})
		s.app.Emails.Register(emails.SourceTransactional, staticRenderer{from: "hello@acme.test"})
		dom, err := s.app.Senders.Add(context.Background(), s.team, "acme.test", true)
		if err != nil {
			t.Fatal(err)
		}
		dns := deliverytest.NewDNS(t)
		publishDKIM(t, s, dns, dom)

		// Delivered, DKIM-verifiable, with a VERP return path.
		id := enqueue(t, s, "ok@example.com")
		waitStatus(t, s, id, emails.StatusDelivered)
		msgs := sink.WaitMessages(t, 1, 10*time.Second)
		m := msgs[0]
		if !m.TLS || m.AuthUser != "relayuser" || m.Helo != "mta.lasso.test" {
			t.Fatalf("session: tls=%v auth=%q helo=%q", m.TLS, m.AuthUser, m.Helo)
		}
		if m.From != "bounce+"+id+"@bounces.acme.test" || m.To[0] != "ok@example.com" {
			t.Fatalf("envelope %s → %v", m.From, m.To)
		}
		if !bytes.Contains(m.Data, []byte("X-Lasso-Send-ID: "+id)) {
			t.Fatal("no X-Lasso-Send-ID")
		}
		vs := dns.RequireDKIM(t, m.Data, "acme.test")
		if len(vs) != 2 {
			t.Fatalf("want RSA and Ed25519 signatures, got %d", len(vs))
		}

		// 451 on the first attempt, then accepted: delivered exactly once.
		sink.Program(deliverytest.Rule{Recipient: "later@example.com", Times: 1, Code: 451, Enhanced: "4.3.0", Message: "try later"})
		id = enqueue(t, s, "later@example.com")
		waitStatus(t, s, id, emails.StatusDelivered)
		if h := statuses(t, s, id); h != "queued,deferred,delivered" {
			t.Fatalf("history %s", h)
		}
		n := 0
		for _, m := range sink.Messages() {
			if m.To[0] == "later@example.com" {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("delivered %d times", n)
		}

		// 550 5.1.1: hard bounce, suppressed, contact unsubscribed.
		expect(t, s.do(t, "POST", "/api/v1/contacts/create", `{"email":"gone@example.com"}`), 200)
		sink.Program(deliverytest.Rule{Recipient: "gone@example.com", Code: 550, Enhanced: "5.1.1", Message: "no such user"})
		id = enqueue(t, s, "gone@example.com")
		waitStatus(t, s, id, emails.StatusHardBounced)
		expect(t, s.do(t, "GET", "/api/v1/contacts/suppression?email=gone%40example.com", ""), 200, `"isSuppressed":true`)
		expect(t, s.do(t, "GET", "/api/v1/contacts/find?email=gone%40example.com", ""), 200, `"subscribed":false`)
		// Suppressed: the next send never leaves.
		id = enqueue(t, s, "gone@example.com")
		waitStatus(t, s, id, emails.StatusSuppressed)

		// 550 5.7.1 (policy): fails at once, reported soft, no suppression, no retry.
		sink.Program(deliverytest.Rule{Recipient: "policy@example.com", Code: 550, Enhanced: "5.7.1", Message: "rejected as spam"})
		id = enqueue(t, s, "policy@example.com")
		waitStatus(t, s, id, emails.StatusSoftBounced)
		if h := statuses(t, s, id); h != "queued,soft_bounced" {
			t.Fatalf("history %s", h)
		}
		if ok, _ := s.app.Contacts.IsSuppressed(context.Background(), s.app.DB, s.team, "policy@example.com"); ok {
			t.Fatal("policy rejection suppressed the address")
		}

		// Always 4xx: retries run out, the send fails, no suppression.
		sink.Program(deliverytest.Rule{Recipient: "full@example.com", Code: 452, Enhanced: "4.2.2", Message: "mailbox full"})
		id = enqueue(t, s, "full@example.com")
		waitStatus(t, s, id, emails.StatusSoftBounced)
		if h := statuses(t, s, id); h != "queued,deferred,deferred,soft_bounced" { // 3 attempts: 1 + the schedule's 2 retries
			t.Fatalf("history %s", h)
		}

		// Per-source counters: 2 delivered (one after a deferral), a hard
		// bounce and a send refused as suppressed, 3 that soft-bounced.
		requireMetrics(t, s, emails.Metrics{Sends: 6, Deliveries: 2, HardBounces: 2, SoftBounces: 3})
	})
}

func TestMXDeliveryAndBounces(t *testing.T) {
	sink := deliverytest.NewSink(t)
	dns := deliverytest.NewDNS(t)
	dns.SetMX("example.net", deliverytest.MX{Host: "mx1.example.net", Pref: 10}, deliverytest.MX{Host: "mx2.example.net", Pref: 20})
	dns.SetA("mx1.example.net", "127.0.0.2") // nothing listens there: the next MX is tried
	dns.SetA("mx2.example.net", "127.0.0.1")
	dns.SetMX("example.co.jp", deliverytest.MX{Host: "mx2.example.net", Pref: 10})
	s := start(t, testdb.URL(t, "sqlite"), func(c *app.Config) {
		c.Outbound = "mx"
		c.Hostname = "mta.lasso.test"
		c.MXResolver = dns.Resolver()
		c.MXPort = sink.Port
		c.MXAllowLoopback = true
		c.MXDisableTLS = true
	})
	s.app.Emails.Register(emails.SourceTransactional, staticRenderer{from: "hello@acme.test"})
	if _, err := s.app.Senders.Add(context.Background(), s.team, "acme.test", true); err != nil {
		t.Fatal(err)
	}
	id := enqueue(t, s, "user@example.net")
	waitStatus(t, s, id, emails.StatusDelivered)
	if m := sink.WaitMessages(t, 1, 10*time.Second)[0]; m.Helo != "mta.lasso.test" || m.To[0] != "user@example.net" {
		t.Fatalf("got %+v", m)
	}

	// An asynchronous DSN arriving at the return path: hard bounce.
	expect(t, s.do(t, "POST", "/api/v1/contacts/create", `{"email":"kijitora@example.co.jp"}`), 200)
	id = enqueue(t, s, "kijitora@example.co.jp")
	waitStatus(t, s, id, emails.StatusDelivered)
	raw, err := os.ReadFile("../bounce/testdata/corpus/mail/lhost-postfix-04.eml")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.app.Emails.HandleBounce(context.Background(), "bounce+"+id+"@bounces.acme.test", raw); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, s, id, emails.StatusHardBounced)
	expect(t, s.do(t, "GET", "/api/v1/contacts/suppression?email=kijitora%40example.co.jp", ""), 200, `"isSuppressed":true`)

	// A complaint (ARF): complained and suppressed.
	id = enqueue(t, s, "redacted@example.net")
	waitStatus(t, s, id, emails.StatusDelivered)
	raw, err = os.ReadFile("../bounce/testdata/corpus/mail/arf-01.eml")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.app.Emails.HandleBounce(context.Background(), "bounce+"+id+"@bounces.acme.test", raw); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, s, id, emails.StatusComplained)
	if ok, _ := s.app.Contacts.IsSuppressed(context.Background(), s.app.DB, s.team, "redacted@example.net"); !ok {
		t.Fatal("complaint did not suppress")
	}
	// A delivered email later reported as spam counts as both; the DSN's hard
	// bounce after delivery counts as a delivery and a hard bounce.
	requireMetrics(t, s, emails.Metrics{Sends: 3, Deliveries: 3, HardBounces: 1, SpamReports: 1})
	// Unknown sends and non-VERP addresses are ignored.
	if err := s.app.Emails.HandleBounce(context.Background(), "postmaster@acme.test", raw); err != nil {
		t.Fatal(err)
	}
}

func TestCaptureMailbox(t *testing.T) {
	s := start(t, testdb.URL(t, "sqlite"), nil)
	s.app.Emails.Register(emails.SourceTransactional, staticRenderer{from: "hello@acme.test"})
	id := enqueue(t, s, "someone@example.com")
	waitStatus(t, s, id, emails.StatusDelivered)
	msgs, err := s.app.Capture.List()
	if err != nil || len(msgs) != 1 || msgs[0].To[0] != "someone@example.com" {
		t.Fatalf("mailbox: %+v %v", msgs, err)
	}
}
