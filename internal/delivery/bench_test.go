package delivery_test

import (
	"strings"
	"testing"

	"github.com/lasso-mail/lasso/internal/delivery"
	"github.com/lasso-mail/lasso/internal/delivery/deliverytest"
)

// benchMessage is a typical ~21 KB marketing message: text + HTML
// alternative, List-Unsubscribe, tracking headers, no attachment.
func benchMessage() *delivery.Message {
	m := marketingMessage()
	m.Attachments = nil
	m.HTML = "<html><body>" + strings.Repeat(`<table role="presentation" width="100%"><tr><td style="padding:12px;font-family:Helvetica,Arial,sans-serif">A paragraph of marketing copy with a <a href="https://acme.test/c/abc123/xyz">tracked link</a>.</td></tr></table>`+"\n", 80) + "</body></html>"
	m.Text = strings.Repeat("A paragraph of marketing copy with a tracked link: https://acme.test/c/abc123/xyz\n", 25)
	return m
}

func BenchmarkCompose(b *testing.B) {
	m := benchMessage()
	raw, _ := delivery.Compose(m)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := delivery.Compose(m); err != nil {
			b.Fatal(err)
		}
	}
}

func benchSign(b *testing.B, keys ...delivery.DKIMKey) {
	raw, err := delivery.Compose(benchMessage())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := delivery.SignDKIM(raw, keys...); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDKIMSignRSA(b *testing.B) {
	rsaK, _ := testKeys(b)
	benchSign(b, rsaK)
}

func BenchmarkDKIMSignEd25519(b *testing.B) {
	_, edK := testKeys(b)
	benchSign(b, edK)
}

func BenchmarkDKIMSignDual(b *testing.B) {
	rsaK, edK := testKeys(b)
	benchSign(b, rsaK, edK)
}

// BenchmarkRelaySend measures messages per second through the relay
// transport to the local sink (plain SMTP on loopback, pooled sessions).
func BenchmarkRelaySend(b *testing.B) {
	for _, par := range []int{1, 8} {
		b.Run(map[int]string{1: "serial", 8: "parallel8"}[par], func(b *testing.B) {
			sink := deliverytest.NewSink(b, deliverytest.SinkOpts{DiscardData: true})
			r, err := delivery.NewRelay("smtp://"+sink.Addr, delivery.RelayConfig{Hostname: ourFQDN, MaxConns: par})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			raw, err := delivery.Compose(benchMessage())
			if err != nil {
				b.Fatal(err)
			}
			env := delivery.Envelope{From: "bounce+x@bounce.acme.test", To: []string{"john@example.test"}}
			b.SetBytes(int64(len(raw)))
			b.SetParallelism(par)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if res := r.Send(b.Context(), env, raw); !res[0].Delivered() {
						b.Errorf("%v", res[0])
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			b.ReportMetric(float64(sink.Connections()), "conns")
		})
	}
}
