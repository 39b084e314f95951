package delivery_test

import (
	"context"
	"fmt"
	"log"

	"github.com/lasso-mail/lasso/internal/delivery"
)

// This example composes a marketing message, signs it with RSA and Ed25519
// and sends it directly to the recipient's MX.
func Example() {
	ctx := context.Background()

	// Once per sending domain: create keys, store the PEM, publish the records.
	rsaKey, _ := delivery.GenerateDKIMKey(delivery.DKIMRSA)
	edKey, _ := delivery.GenerateDKIMKey(delivery.DKIMEd25519)
	rec, _ := delivery.DKIMRecord(rsaKey)
	fmt.Println(delivery.DKIMRecordName("lasso202611r", "acme.example"), "TXT", rec[:20]+"…")

	raw, err := delivery.Compose(&delivery.Message{
		From:    delivery.Address{Name: "Acme", Email: "news@acme.example"},
		To:      []delivery.Address{{Email: "jane@example.org"}},
		Subject: "November news",
		Text:    "Hello Jane …",
		HTML:    "<p>Hello Jane …</p>",
		ListUnsubscribe: &delivery.ListUnsubscribe{
			URL:      "https://acme.example/unsubscribe/abc",
			Mailto:   "unsubscribe+abc@acme.example",
			OneClick: true,
		},
		Headers: []delivery.Header{{Name: "X-Lasso-Send-ID", Value: "snd_123"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	signed, err := delivery.SignDKIM(raw,
		delivery.DKIMKey{Domain: "acme.example", Selector: "lasso202611r", Signer: rsaKey},
		delivery.DKIMKey{Domain: "acme.example", Selector: "lasso202611e", Signer: edKey},
	)
	if err != nil {
		log.Fatal(err)
	}

	mx, err := delivery.NewMX(delivery.MXConfig{Hostname: "mta.acme.example"})
	if err != nil {
		log.Fatal(err)
	}
	defer mx.Close()
	var t delivery.Transport = mx
	_ = func() {
		for _, r := range t.Send(ctx, delivery.Envelope{From: "bounce+snd_123@bounce.acme.example", To: []string{"jane@example.org"}}, signed) {
			switch {
			case r.Delivered():
				// mark sent
			case r.Temporary():
				// retry with back-off
			case r.BadAddress():
				// hard bounce: suppress the address
			default:
				// permanent, but not the address's fault (policy, spam, size)
			}
		}
	}
	// Output: lasso202611r._domainkey.acme.example TXT v=DKIM1; k=rsa; p=MI…
}
