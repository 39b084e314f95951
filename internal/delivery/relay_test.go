package delivery_test

import (
	"crypto/tls"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/delivery"
	"github.com/lasso-mail/lasso/internal/delivery/deliverytest"
)

const ourFQDN = "mta.lasso.test"

func testMessage(t testing.TB, to string) []byte {
	t.Helper()
	raw, err := delivery.Compose(&delivery.Message{
		From:    delivery.Address{Name: "Acme", Email: "hello@acme.test"},
		To:      []delivery.Address{{Email: to}},
		Subject: "Your receipt",
		Text:    "Thanks for your order.\n",
		HTML:    "<p>Thanks for your order.</p>",
	})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func newRelay(t *testing.T, rawURL string, cfg delivery.RelayConfig) *delivery.Relay {
	t.Helper()
	if cfg.Hostname == "" {
		cfg.Hostname = ourFQDN
	}
	r, err := delivery.NewRelay(rawURL, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func requireStatus(t *testing.T, res []delivery.Result, want ...delivery.Status) {
	t.Helper()
	if len(res) != len(want) {
		t.Fatalf("%d results, want %d: %v", len(res), len(want), res)
	}
	for i := range res {
		if res[i].Status != want[i] {
			t.Errorf("result %d = %v, want %v", i, res[i], want[i])
		}
	}
}

func TestRelaySTARTTLSAuth(t *testing.T) {
	t.Parallel()
	for _, mech := range []string{"", "login"} {
		t.Run("auth="+mech, func(t *testing.T) {
			t.Parallel()
			sink := deliverytest.NewSink(t, deliverytest.SinkOpts{TLS: true, Username: "user@acme.test", Password: "p@ss:wörd"})
			u := fmt.Sprintf("smtp://%s:%s@%s?tls=required&auth=%s",
				url.QueryEscape("user@acme.test"), url.QueryEscape("p@ss:wörd"), sink.Addr, mech)
			r := newRelay(t, u, delivery.RelayConfig{TLSConfig: &tls.Config{RootCAs: sink.CertPool()}})

			msg := testMessage(t, "jane@example.test")
			res := r.Send(t.Context(), delivery.Envelope{From: "bounce+s1@bounce.acme.test", To: []string{"jane@example.test"}}, msg)
			requireStatus(t, res, delivery.StatusDelivered)
			if res[0].Code != 250 {
				t.Errorf("code = %d", res[0].Code)
			}

			got := sink.WaitMessages(t, 1, 5*time.Second)[0]
			if !got.TLS || got.AuthUser != "user@acme.test" {
				t.Errorf("TLS=%v AuthUser=%q", got.TLS, got.AuthUser)
			}
			if got.From != "bounce+s1@bounce.acme.test" || strings.Join(got.To, ",") != "jane@example.test" {
				t.Errorf("envelope = %q %q", got.From, got.To)
			}
			if string(got.Data) != string(msg) {
				t.Errorf("message changed in transit")
			}
			// The very first EHLO, before STARTTLS, already carries our FQDN.
			if h := sink.Helos(); len(h) == 0 || h[0] != ourFQDN {
				t.Errorf("EHLO names = %q", h)
			}
		})
	}
}

func TestRelayImplicitTLS(t *testing.T) {
	t.Parallel()
	sink := deliverytest.NewSink(t, deliverytest.SinkOpts{ImplicitTLS: true, Username: "u", Password: "p"})
	r := newRelay(t, "smtps://u:p@"+sink.Addr, delivery.RelayConfig{TLSConfig: &tls.Config{RootCAs: sink.CertPool()}})
	res := r.Send(t.Context(), delivery.Envelope{From: "b@acme.test", To: []string{"x@example.test"}}, testMessage(t, "x@example.test"))
	requireStatus(t, res, delivery.StatusDelivered)
	if m := sink.WaitMessages(t, 1, 5*time.Second)[0]; !m.TLS {
		t.Error("not TLS")
	}
}

func TestRelayFailuresAreTemporary(t *testing.T) {
	t.Parallel()
	env := delivery.Envelope{From: "b@acme.test", To: []string{"x@example.test"}}

	t.Run("wrong password", func(t *testing.T) {
		t.Parallel()
		sink := deliverytest.NewSink(t, deliverytest.SinkOpts{TLS: true, Username: "u", Password: "right"})
		r := newRelay(t, "smtp://u:wrong@"+sink.Addr, delivery.RelayConfig{TLSConfig: &tls.Config{RootCAs: sink.CertPool()}})
		res := r.Send(t.Context(), env, testMessage(t, "x@example.test"))
		requireStatus(t, res, delivery.StatusTemporary)
		if res[0].Code != 535 || res[0].Enhanced != "5.7.8" {
			t.Errorf("result = %v", res[0])
		}
	})
	t.Run("tls required but not offered", func(t *testing.T) {
		t.Parallel()
		sink := deliverytest.NewSink(t)
		r := newRelay(t, "smtp://"+sink.Addr+"?tls=required", delivery.RelayConfig{})
		res := r.Send(t.Context(), env, testMessage(t, "x@example.test"))
		requireStatus(t, res, delivery.StatusTemporary)
		if res[0].Enhanced != "4.7.10" {
			t.Errorf("result = %v", res[0])
		}
		if len(sink.Messages()) != 0 {
			t.Error("message was sent in plaintext")
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		t.Parallel()
		sink := deliverytest.NewSink(t, deliverytest.SinkOpts{TLS: true})
		r := newRelay(t, "smtp://"+sink.Addr+"?tls=required", delivery.RelayConfig{})
		res := r.Send(t.Context(), env, testMessage(t, "x@example.test"))
		requireStatus(t, res, delivery.StatusTemporary)
		if len(sink.Messages()) != 0 {
			t.Error("message was sent")
		}
	})
	t.Run("relay down", func(t *testing.T) {
		t.Parallel()
		r := newRelay(t, "smtp://127.0.0.2:1", delivery.RelayConfig{})
		res := r.Send(t.Context(), env, testMessage(t, "x@example.test"))
		requireStatus(t, res, delivery.StatusTemporary)
		if res[0].Code != 0 || res[0].Enhanced != "4.4.1" || res[0].Err == nil {
			t.Errorf("result = %v", res[0])
		}
	})
}

// TestRelayReplyClassification programs the sink per recipient and checks
// that one transaction yields one correct result per recipient.
func TestRelayReplyClassification(t *testing.T) {
	t.Parallel()
	sink := deliverytest.NewSink(t)
	sink.Program(deliverytest.Rule{Recipient: "gone@example.test", Code: 550, Enhanced: "5.1.1", Message: "No such user"})
	sink.Program(deliverytest.Rule{Recipient: "grey@example.test", Code: 451, Enhanced: "4.7.1", Message: "Greylisted, try later"})
	sink.Program(deliverytest.Rule{Recipient: "full@example.test", Code: 552, Enhanced: "5.2.2", Message: "Mailbox full"})
	sink.Program(deliverytest.Rule{Recipient: "policy@example.test", Code: 550, Enhanced: "5.7.1", Message: "Rejected by policy"})
	r := newRelay(t, "smtp://"+sink.Addr, delivery.RelayConfig{})

	env := delivery.Envelope{From: "b@acme.test", To: []string{
		"ok@example.test", "gone@example.test", "grey@example.test", "full@example.test", "policy@example.test", "bad address",
	}}
	res := r.Send(t.Context(), env, testMessage(t, "ok@example.test"))
	requireStatus(t, res, delivery.StatusDelivered, delivery.StatusPermanent, delivery.StatusTemporary,
		delivery.StatusTemporary, delivery.StatusPermanent, delivery.StatusPermanent)

	want := []struct {
		code       int
		enh        string
		badAddress bool
	}{
		{250, "2.0.0", false},
		{550, "5.1.1", true},
		{451, "4.7.1", false},
		{552, "5.2.2", false},
		{550, "5.7.1", false},
		{0, "5.1.3", true},
	}
	for i, w := range want {
		if res[i].Code != w.code || res[i].Enhanced != w.enh || res[i].BadAddress() != w.badAddress {
			t.Errorf("result %d = %v (BadAddress %v), want %d %s %v", i, res[i], res[i].BadAddress(), w.code, w.enh, w.badAddress)
		}
	}
	if res[1].Message != "No such user" {
		t.Errorf("message = %q", res[1].Message)
	}
	got := sink.WaitMessages(t, 1, 5*time.Second)
	if len(got) != 1 || strings.Join(got[0].To, ",") != "ok@example.test" {
		t.Errorf("sink got %+v", got)
	}

	// A DATA rejection applies to every accepted recipient, and the
	// session stays usable.
	sink.Program(deliverytest.Rule{Stage: deliverytest.StageData, Times: 1, Code: 554, Enhanced: "5.7.1", Message: "Spam detected"})
	res = r.Send(t.Context(), delivery.Envelope{From: "b@acme.test", To: []string{"a@example.test", "b@example.test"}}, testMessage(t, "a@example.test"))
	requireStatus(t, res, delivery.StatusPermanent, delivery.StatusPermanent)
	if res[0].Code != 554 || res[0].Message != "Spam detected" {
		t.Errorf("result = %v", res[0])
	}
	res = r.Send(t.Context(), delivery.Envelope{From: "b@acme.test", To: []string{"a@example.test"}}, testMessage(t, "a@example.test"))
	requireStatus(t, res, delivery.StatusDelivered)
	if n := sink.Connections(); n != 1 {
		t.Errorf("%d connections, want 1 (session reused after failures)", n)
	}

	// MAIL FROM rejected: every recipient fails alike.
	sink.Program(deliverytest.Rule{Stage: deliverytest.StageMail, Times: 1, Code: 421, Enhanced: "4.3.2", Message: "Shutting down"})
	res = r.Send(t.Context(), delivery.Envelope{From: "b@acme.test", To: []string{"a@example.test", "b@example.test"}}, testMessage(t, "a@example.test"))
	requireStatus(t, res, delivery.StatusTemporary, delivery.StatusTemporary)
}

func TestRelayConnectionReuse(t *testing.T) {
	t.Parallel()
	sink := deliverytest.NewSink(t, deliverytest.SinkOpts{TLS: true, Username: "u", Password: "p"})
	r := newRelay(t, "smtp://u:p@"+sink.Addr, delivery.RelayConfig{TLSConfig: &tls.Config{RootCAs: sink.CertPool()}})
	for i := range 10 {
		rcpt := fmt.Sprintf("r%d@example.test", i)
		res := r.Send(t.Context(), delivery.Envelope{From: "b@acme.test", To: []string{rcpt}}, testMessage(t, rcpt))
		requireStatus(t, res, delivery.StatusDelivered)
	}
	sink.WaitMessages(t, 10, 5*time.Second)
	if n := sink.Connections(); n != 1 {
		t.Errorf("%d connections for 10 sequential messages, want 1", n)
	}
	_ = r.Close()
	sink.WaitClosed(t, 5*time.Second)
}

func TestParseRelayURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    delivery.RelayURL
		wantErr bool
	}{
		{in: "smtp://relay.test", want: delivery.RelayURL{Host: "relay.test", Port: 587, TLS: delivery.RelayTLSOpportunistic}},
		{in: "smtp://u:p%40ss@relay.test:2525", want: delivery.RelayURL{Host: "relay.test", Port: 2525, TLS: delivery.RelayTLSRequired, Username: "u", Password: "p@ss"}},
		{in: "smtps://u:p@relay.test?auth=LOGIN", want: delivery.RelayURL{Host: "relay.test", Port: 465, ImplicitTLS: true, TLS: delivery.RelayTLSRequired, Username: "u", Password: "p", AuthMechanism: "LOGIN"}},
		{in: "smtp://relay.test:25?tls=none&helo=mta.acme.test", want: delivery.RelayURL{Host: "relay.test", Port: 25, TLS: delivery.RelayTLSNone, Helo: "mta.acme.test"}},
		{in: "http://relay.test", wantErr: true},
		{in: "smtp://relay.test?tls=maybe", wantErr: true},
		{in: "smtp://relay.test?foo=bar", wantErr: true},
		{in: "smtp://:25", wantErr: true},
		{in: "smtp://relay.test?auth=cram-md5", wantErr: true},
	}
	for _, tt := range tests {
		got, err := delivery.ParseRelayURL(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseRelayURL(%q) error = %v", tt.in, err)
			continue
		}
		if err == nil && got != tt.want {
			t.Errorf("ParseRelayURL(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
	u, _ := delivery.ParseRelayURL("smtp://user:secret@relay.test")
	if s := u.String(); strings.Contains(s, "secret") {
		t.Errorf("String() leaks the password: %s", s)
	}
	if _, err := delivery.ParseRelayURL("smtp://user:secret@relay.test?tls=bogus"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("error leaks the password or is nil: %v", err)
	}
}
