package senders

import (
	"testing"

	"github.com/lasso-mail/lasso/internal/delivery"
)

func TestKeyCache(t *testing.T) {
	pemOf := func(alg delivery.DKIMAlgorithm) string {
		k, err := delivery.GenerateDKIMKey(alg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := delivery.MarshalDKIMKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var c keyCache
	rsa, ed := pemOf(delivery.DKIMRSA), pemOf(delivery.DKIMEd25519)
	a, err := c.parse(rsa)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.parse(rsa)
	if err != nil || a != b {
		t.Fatalf("same PEM parsed twice: %p %p %v", a, b, err)
	}
	e, err := c.parse(ed)
	if err != nil || e == a {
		t.Fatalf("another key: %v", err)
	}
	if _, err := c.parse("not a key"); err == nil {
		t.Fatal("bad PEM accepted")
	}
	if _, ok := c.m["not a key"]; ok {
		t.Fatal("a failure was cached")
	}
	// Past maxKeys entries the cache starts over instead of growing.
	for i := range maxKeys {
		c.m[string(rune(i))+"x"] = a
	}
	if _, err := c.parse(pemOf(delivery.DKIMEd25519)); err != nil || len(c.m) != 1 {
		t.Fatalf("cache size %d: %v", len(c.m), err)
	}
}
