package delivery_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/delivery"
	"github.com/lasso-mail/lasso/internal/delivery/deliverytest"
)

type mxBundle struct {
	dns  *deliverytest.DNS
	sink *deliverytest.Sink
	mx   *delivery.MX
}

// setupMX starts a fake DNS and a sink on 127.0.0.1 and an MX transport that
// resolves through the DNS and connects to the sink's port. 127.0.0.2 is a
// loopback address where nothing listens ("host down").
func setupMX(t *testing.T, sinkOpts deliverytest.SinkOpts, cfg delivery.MXConfig) *mxBundle {
	t.Helper()
	b := &mxBundle{dns: deliverytest.NewDNS(t), sink: deliverytest.NewSink(t, sinkOpts)}
	cfg.Hostname = ourFQDN
	cfg.Resolver = b.dns.Resolver()
	cfg.Port = b.sink.Port
	cfg.AllowLoopback = true
	mx, err := delivery.NewMX(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mx.Close() })
	b.mx = mx
	return b
}

func (b *mxBundle) send(t *testing.T, ctx context.Context, to ...string) []delivery.Result {
	t.Helper()
	return b.mx.Send(ctx, delivery.Envelope{From: "bounce+x@bounce.acme.test", To: to}, testMessage(t, to[0]))
}

func TestMXFallsBackToSecondHost(t *testing.T) {
	t.Parallel()
	b := setupMX(t, deliverytest.SinkOpts{}, delivery.MXConfig{})
	b.dns.SetMX("example.test", deliverytest.MX{Host: "mx1.example.test", Pref: 10}, deliverytest.MX{Host: "mx2.example.test", Pref: 20})
	b.dns.SetA("mx1.example.test", "127.0.0.2") // down
	b.dns.SetA("mx2.example.test", "127.0.0.1")

	res := b.send(t, t.Context(), "jane@example.test")
	requireStatus(t, res, delivery.StatusDelivered)
	if res[0].Host != "mx2.example.test" {
		t.Errorf("delivered by %q", res[0].Host)
	}
	m := b.sink.WaitMessages(t, 1, 5*time.Second)[0]
	if m.Helo != ourFQDN || m.From != "bounce+x@bounce.acme.test" {
		t.Errorf("helo %q from %q", m.Helo, m.From)
	}
}

func TestMXImplicitA(t *testing.T) {
	t.Parallel()
	b := setupMX(t, deliverytest.SinkOpts{}, delivery.MXConfig{})
	b.dns.SetA("plain.test", "127.0.0.1") // no MX: RFC 5321 §5.1 implicit MX
	res := b.send(t, t.Context(), "jane@plain.test")
	requireStatus(t, res, delivery.StatusDelivered)
	if res[0].Host != "plain.test" {
		t.Errorf("host = %q", res[0].Host)
	}
}

func TestMXDNSOutcomes(t *testing.T) {
	t.Parallel()
	b := setupMX(t, deliverytest.SinkOpts{}, delivery.MXConfig{})
	b.dns.SetMX("nullmx.test", deliverytest.MX{Host: ".", Pref: 0})
	b.dns.SetServFail("broken.test", true)
	b.dns.SetMX("down.test", deliverytest.MX{Host: "mx1.down.test", Pref: 10}, deliverytest.MX{Host: "mx2.down.test", Pref: 10})
	b.dns.SetA("mx1.down.test", "127.0.0.2")
	b.dns.SetA("mx2.down.test", "127.0.0.3")
	b.dns.SetMX("dangling.test", deliverytest.MX{Host: "nothere.dangling.test", Pref: 10})
	b.dns.SetTXT("nomail.test", "v=spf1 -all") // exists, but no MX and no A

	tests := []struct {
		rcpt       string
		status     delivery.Status
		enhanced   string
		badAddress bool
	}{
		{"a@nxdomain.test", delivery.StatusPermanent, "5.1.2", true},
		{"a@nomail.test", delivery.StatusPermanent, "5.1.2", true},
		{"a@nullmx.test", delivery.StatusPermanent, "5.1.10", true},
		{"a@broken.test", delivery.StatusTemporary, "4.4.3", false},
		{"a@down.test", delivery.StatusTemporary, "4.4.1", false},
		{"a@dangling.test", delivery.StatusTemporary, "4.4.4", false},
	}
	for _, tt := range tests {
		t.Run(tt.rcpt, func(t *testing.T) {
			t.Parallel()
			res := b.send(t, t.Context(), tt.rcpt)
			requireStatus(t, res, tt.status)
			if res[0].Enhanced != tt.enhanced || res[0].Code != 0 || res[0].BadAddress() != tt.badAddress {
				t.Errorf("result = %v (BadAddress %v), want %s", res[0], res[0].BadAddress(), tt.enhanced)
			}
		})
	}
}

func TestMXReplies(t *testing.T) {
	t.Parallel()
	b := setupMX(t, deliverytest.SinkOpts{}, delivery.MXConfig{})
	b.dns.SetMX("example.test", deliverytest.MX{Host: "mx.example.test", Pref: 10})
	b.dns.SetA("mx.example.test", "127.0.0.1")

	// 451 on the first attempt, then accepted: temporary, then delivered.
	b.sink.Program(deliverytest.Rule{Recipient: "grey@example.test", Times: 1, Code: 451, Enhanced: "4.3.0", Message: "Try again later"})
	res := b.send(t, t.Context(), "grey@example.test")
	requireStatus(t, res, delivery.StatusTemporary)
	if res[0].Code != 451 || res[0].Enhanced != "4.3.0" || res[0].Host != "mx.example.test" {
		t.Errorf("first attempt = %v", res[0])
	}
	requireStatus(t, b.send(t, t.Context(), "grey@example.test"), delivery.StatusDelivered)

	// 550 5.1.1: permanent, hard bounce.
	b.sink.Program(deliverytest.Rule{Recipient: "gone@example.test", Code: 550, Enhanced: "5.1.1", Message: "User unknown"})
	res = b.send(t, t.Context(), "gone@example.test")
	requireStatus(t, res, delivery.StatusPermanent)
	if !res[0].BadAddress() || res[0].Code != 550 {
		t.Errorf("result = %v", res[0])
	}

	// An IDN domain is looked up and sent as its A-label; the result keeps
	// the address as given.
	b.dns.SetA("xn--mnchen-3ya.test", "127.0.0.1")
	res = b.send(t, t.Context(), "anna@münchen.test")
	requireStatus(t, res, delivery.StatusDelivered)
	if res[0].Recipient != "anna@münchen.test" {
		t.Errorf("recipient = %q", res[0].Recipient)
	}
	if m := b.sink.WaitMessages(t, 2, 5*time.Second); m[len(m)-1].To[0] != "anna@xn--mnchen-3ya.test" {
		t.Errorf("RCPT TO = %q", m[len(m)-1].To)
	}

	// Several domains in one Send: grouped per domain, results in order.
	b.dns.SetA("other.test", "127.0.0.1")
	res = b.send(t, t.Context(), "x@example.test", "y@other.test", "gone@example.test", "z@nxdomain.test")
	requireStatus(t, res, delivery.StatusDelivered, delivery.StatusDelivered, delivery.StatusPermanent, delivery.StatusPermanent)
}

func TestMXOpportunisticTLS(t *testing.T) {
	t.Parallel()
	t.Run("unverifiable certificate falls back to unverified TLS", func(t *testing.T) {
		t.Parallel()
		// The certificate names "localhost", not the MX host.
		b := setupMX(t, deliverytest.SinkOpts{TLS: true}, delivery.MXConfig{})
		b.dns.SetMX("example.test", deliverytest.MX{Host: "mx.example.test", Pref: 10})
		b.dns.SetA("mx.example.test", "127.0.0.1")
		requireStatus(t, b.send(t, t.Context(), "a@example.test"), delivery.StatusDelivered)
		requireStatus(t, b.send(t, t.Context(), "b@example.test"), delivery.StatusDelivered)
		for _, m := range b.sink.WaitMessages(t, 2, 5*time.Second) {
			if !m.TLS {
				t.Error("message sent without TLS")
			}
		}
		// First connection failed verification; the second succeeded
		// without it and was reused for the second message.
		if n := b.sink.Connections(); n != 2 {
			t.Errorf("%d connections, want 2", n)
		}
	})
	t.Run("verified", func(t *testing.T) {
		t.Parallel()
		b := setupMX(t, deliverytest.SinkOpts{TLS: true, TLSNames: []string{"mx.example.test"}}, delivery.MXConfig{})
		b.dns.SetMX("example.test", deliverytest.MX{Host: "mx.example.test", Pref: 10})
		b.dns.SetA("mx.example.test", "127.0.0.1")
		// The pool is a fresh MX per subtest, so configure roots here.
		mx, err := delivery.NewMX(delivery.MXConfig{Hostname: ourFQDN, Resolver: b.dns.Resolver(), Port: b.sink.Port,
			AllowLoopback: true, TLSConfig: &tls.Config{RootCAs: b.sink.CertPool()}})
		if err != nil {
			t.Fatal(err)
		}
		defer mx.Close()
		res := mx.Send(t.Context(), delivery.Envelope{From: "b@acme.test", To: []string{"a@example.test"}}, testMessage(t, "a@example.test"))
		requireStatus(t, res, delivery.StatusDelivered)
		if m := b.sink.WaitMessages(t, 1, 5*time.Second)[0]; !m.TLS {
			t.Error("not TLS")
		}
		if n := b.sink.Connections(); n != 1 {
			t.Errorf("%d connections, want 1", n)
		}
	})
}

func TestMXTLSHandshakeFailureFallsBackToPlaintext(t *testing.T) {
	t.Parallel()
	// The client only speaks TLS 1.2 with RSA suites; the sink's certificate
	// is ECDSA, so the handshake fails without a verification error.
	b := setupMX(t, deliverytest.SinkOpts{TLS: true}, delivery.MXConfig{TLSConfig: &tls.Config{
		MaxVersion:   tls.VersionTLS12,
		CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256},
	}})
	b.dns.SetA("plain.test", "127.0.0.1")
	requireStatus(t, b.send(t, t.Context(), "a@plain.test"), delivery.StatusDelivered)
	if m := b.sink.WaitMessages(t, 1, 5*time.Second)[0]; m.TLS {
		t.Error("expected plaintext after the failed handshake")
	}
	if n := b.sink.Connections(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

func TestMXRefusesLoopbackByDefault(t *testing.T) {
	t.Parallel()
	dns := deliverytest.NewDNS(t)
	sink := deliverytest.NewSink(t)
	dns.SetA("loop.test", "127.0.0.1")
	mx, err := delivery.NewMX(delivery.MXConfig{Hostname: ourFQDN, Resolver: dns.Resolver(), Port: sink.Port})
	if err != nil {
		t.Fatal(err)
	}
	defer mx.Close()
	res := mx.Send(t.Context(), delivery.Envelope{From: "b@acme.test", To: []string{"a@loop.test"}}, testMessage(t, "a@loop.test"))
	requireStatus(t, res, delivery.StatusTemporary)
	if sink.Connections() != 0 {
		t.Error("connected to loopback")
	}
}

func TestMXConnectionReuse(t *testing.T) {
	t.Parallel()
	b := setupMX(t, deliverytest.SinkOpts{}, delivery.MXConfig{})
	b.dns.SetMX("example.test", deliverytest.MX{Host: "mx.example.test", Pref: 10})
	b.dns.SetA("mx.example.test", "127.0.0.1")
	for i := range 10 {
		requireStatus(t, b.send(t, t.Context(), fmt.Sprintf("r%d@example.test", i)), delivery.StatusDelivered)
	}
	b.sink.WaitMessages(t, 10, 5*time.Second)
	if n := b.sink.Connections(); n != 1 {
		t.Errorf("%d connections for 10 sequential messages, want 1", n)
	}
	if err := b.mx.Close(); err != nil {
		t.Fatal(err)
	}
	b.sink.WaitClosed(t, 5*time.Second)
}

func TestMXIdleTimeout(t *testing.T) {
	t.Parallel()
	b := setupMX(t, deliverytest.SinkOpts{}, delivery.MXConfig{IdleTimeout: 50 * time.Millisecond})
	b.dns.SetA("plain.test", "127.0.0.1")
	requireStatus(t, b.send(t, t.Context(), "a@plain.test"), delivery.StatusDelivered)
	b.sink.WaitClosed(t, 5*time.Second) // QUIT after 50 ms idle
	requireStatus(t, b.send(t, t.Context(), "b@plain.test"), delivery.StatusDelivered)
	if n := b.sink.Connections(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

func TestMXConcurrencyLimit(t *testing.T) {
	t.Parallel()
	b := setupMX(t, deliverytest.SinkOpts{DataDelay: 30 * time.Millisecond}, delivery.MXConfig{MaxConnsPerDomain: 2})
	b.dns.SetMX("example.test", deliverytest.MX{Host: "mx.example.test", Pref: 10})
	b.dns.SetA("mx.example.test", "127.0.0.1")
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			requireStatus(t, b.send(t, t.Context(), fmt.Sprintf("r%d@example.test", i)), delivery.StatusDelivered)
		})
	}
	wg.Wait()
	if got := b.sink.MaxConcurrentTransactions(); got != 2 {
		t.Errorf("max concurrent transactions = %d, want 2", got)
	}
	if n := b.sink.Connections(); n > 2 {
		t.Errorf("%d connections, want ≤ 2", n)
	}
}

func TestMXContextDeadline(t *testing.T) {
	t.Parallel()
	b := setupMX(t, deliverytest.SinkOpts{DataDelay: 3 * time.Second}, delivery.MXConfig{})
	b.dns.SetA("slow.test", "127.0.0.1")
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	res := b.send(t, ctx, "a@slow.test")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Send took %v despite a 200 ms deadline", d)
	}
	requireStatus(t, res, delivery.StatusTemporary)
	if res[0].Err == nil {
		t.Errorf("result = %v, want a cause", res[0])
	}

	// Cancelled while waiting for a domain slot.
	ctx, cancel = context.WithCancel(t.Context())
	cancel()
	requireStatus(t, b.send(t, ctx, "b@slow.test"), delivery.StatusTemporary)
}
