package delivery_test

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/delivery"
	"github.com/lasso-mail/lasso/internal/delivery/deliverytest"
)

// Generating RSA-2048 keys takes ~100 ms; share them across tests.
var (
	keysOnce sync.Once
	rsaKey   *rsa.PrivateKey
	edKey    delivery.DKIMKey
)

func testKeys(t testing.TB) (rsaK, edK delivery.DKIMKey) {
	t.Helper()
	keysOnce.Do(func() {
		k, err := delivery.GenerateDKIMKey(delivery.DKIMRSA)
		if err != nil {
			panic(err)
		}
		rsaKey = k.(*rsa.PrivateKey)
		e, err := delivery.GenerateDKIMKey(delivery.DKIMEd25519)
		if err != nil {
			panic(err)
		}
		edKey = delivery.DKIMKey{Domain: "acme.test", Selector: "lasso202611e", Signer: e}
	})
	return delivery.DKIMKey{Domain: "acme.test", Selector: "lasso202611r", Signer: rsaKey}, edKey
}

// publish puts the public halves of keys into the fake DNS.
func publish(t testing.TB, d *deliverytest.DNS, keys ...delivery.DKIMKey) {
	t.Helper()
	for _, k := range keys {
		rec, err := delivery.DKIMRecord(k.Signer)
		if err != nil {
			t.Fatal(err)
		}
		d.SetTXT(delivery.DKIMRecordName(k.Selector, k.Domain), rec)
	}
}

func TestDKIMKeyRoundTrip(t *testing.T) {
	t.Parallel()
	rsaK, edK := testKeys(t)
	for _, k := range []delivery.DKIMKey{rsaK, edK} {
		alg, err := delivery.DKIMKeyAlgorithm(k.Signer)
		if err != nil {
			t.Fatal(err)
		}
		pemBytes, err := delivery.MarshalDKIMKey(k.Signer)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(pemBytes, []byte("-----BEGIN PRIVATE KEY-----")) {
			t.Errorf("%s: PEM = %.40q", alg, pemBytes)
		}
		back, err := delivery.ParseDKIMKey(pemBytes)
		if err != nil {
			t.Fatal(err)
		}
		r1, _ := delivery.DKIMRecord(k.Signer)
		r2, _ := delivery.DKIMRecord(back)
		if r1 != r2 {
			t.Errorf("%s: public key changed in round trip", alg)
		}
		if !strings.HasPrefix(r1, "v=DKIM1; k="+string(alg)+"; p=") {
			t.Errorf("record = %q", r1)
		}
	}

	// PKCS #1 as written by "openssl genrsa -traditional".
	pkcs1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)})
	if _, err := delivery.ParseDKIMKey(pkcs1); err != nil {
		t.Errorf("PKCS #1: %v", err)
	}
	if _, err := delivery.ParseDKIMKey([]byte("garbage")); err == nil {
		t.Error("garbage parsed")
	}

	if got := delivery.DKIMSelector("lasso", delivery.DKIMRSA, time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)); got != "lasso202611r" {
		t.Errorf("selector = %q", got)
	}
	if got := delivery.DKIMRecordName("s1", "acme.test."); got != "s1._domainkey.acme.test" {
		t.Errorf("record name = %q", got)
	}
	rec, _ := delivery.DKIMRecord(rsaK.Signer)
	parts := delivery.SplitTXT(rec)
	if len(parts) < 2 || strings.Join(parts, "") != rec {
		t.Errorf("SplitTXT gave %d parts", len(parts))
	}
	for _, p := range parts {
		if len(p) > 255 {
			t.Errorf("part of %d octets", len(p))
		}
	}
}

func TestDKIMSignVerify(t *testing.T) {
	t.Parallel()
	rsaK, edK := testKeys(t)
	dns := deliverytest.NewDNS(t)
	publish(t, dns, rsaK, edK)

	raw, err := delivery.Compose(marketingMessage())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		keys []delivery.DKIMKey
	}{
		{"rsa", []delivery.DKIMKey{rsaK}},
		{"ed25519", []delivery.DKIMKey{edK}},
		{"dual", []delivery.DKIMKey{rsaK, edK}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			signed, err := delivery.SignDKIM(raw, tt.keys...)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasSuffix(signed, raw) {
				t.Fatal("signing changed the message")
			}
			vs := dns.RequireDKIM(t, signed, "acme.test")
			if len(vs) != len(tt.keys) {
				t.Fatalf("%d verifications, want %d", len(vs), len(tt.keys))
			}
			signedKeys := strings.ToLower(strings.Join(vs[0].HeaderKeys, ":"))
			for _, h := range []string{"from", "to", "subject", "date", "message-id", "mime-version",
				"content-type", "list-unsubscribe", "list-unsubscribe-post", "reply-to", "feedback-id"} {
				if !strings.Contains(signedKeys, h) {
					t.Errorf("h= lacks %s: %s", h, signedKeys)
				}
			}
			if strings.Count(signedKeys, "from") != 2 {
				t.Errorf("From is not over-signed: %s", signedKeys)
			}

			// Tampering with a signed field breaks every signature.
			tampered := bytes.Replace(signed, []byte("List-Unsubscribe-Post: List-Unsubscribe=One-Click"),
				[]byte("List-Unsubscribe-Post: List-Unsubscribe=Two-Click"), 1)
			vs, err = dns.VerifyDKIM(tampered)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vs {
				if v.Err == nil {
					t.Error("tampered message verified")
				}
			}
			// Adding a second From breaks it too (over-signing).
			added := append([]byte("From: evil@x.test\r\n"), signed...)
			vs, _ = dns.VerifyDKIM(added)
			for _, v := range vs {
				if v.Err == nil {
					t.Error("message with added From verified")
				}
			}
		})
	}
}

func TestDKIMSignErrors(t *testing.T) {
	t.Parallel()
	rsaK, _ := testKeys(t)
	if _, err := delivery.SignDKIM([]byte("Subject: x\r\n\r\nbody"), rsaK); err == nil {
		t.Error("signed a message without From")
	}
	if _, err := delivery.SignDKIM([]byte("From: a@b.test\r\n\r\nbody"), delivery.DKIMKey{Domain: "b.test", Signer: rsaK.Signer}); err == nil {
		t.Error("signed without selector")
	}
	msg := []byte("From: a@b.test\r\n\r\nbody")
	if out, err := delivery.SignDKIM(msg); err != nil || !bytes.Equal(out, msg) {
		t.Error("no keys should return msg unchanged")
	}
}
