package delivery

import (
	"bufio"
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/textproto"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-msgauth/dkim"
)

// DKIMAlgorithm is a DKIM key type.
type DKIMAlgorithm string

const (
	// DKIMRSA is RSA-2048 with SHA-256 (RFC 6376), verified everywhere.
	DKIMRSA DKIMAlgorithm = "rsa"
	// DKIMEd25519 is Ed25519-SHA256 (RFC 8463). Not every receiver verifies
	// it, so sign with it only in addition to RSA.
	DKIMEd25519 DKIMAlgorithm = "ed25519"
)

// dkimRSABits is the RSA modulus size of generated keys. 2048 fits in one
// DNS TXT record (split into 255-octet strings) and is what large receivers
// expect; 1024 is considered weak.
const dkimRSABits = 2048

// GenerateDKIMKey returns a new private key for alg.
func GenerateDKIMKey(alg DKIMAlgorithm) (crypto.Signer, error) {
	switch alg {
	case DKIMRSA:
		return rsa.GenerateKey(rand.Reader, dkimRSABits)
	case DKIMEd25519:
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		return priv, err
	default:
		return nil, fmt.Errorf("delivery: unknown DKIM algorithm %q", alg)
	}
}

// DKIMKeyAlgorithm reports the algorithm of a key (private or public).
func DKIMKeyAlgorithm(key any) (DKIMAlgorithm, error) {
	if s, ok := key.(crypto.Signer); ok {
		key = s.Public()
	}
	switch key.(type) {
	case *rsa.PublicKey:
		return DKIMRSA, nil
	case ed25519.PublicKey:
		return DKIMEd25519, nil
	default:
		return "", fmt.Errorf("delivery: unsupported DKIM key type %T", key)
	}
}

// MarshalDKIMKey encodes a private key as PEM ("PRIVATE KEY", PKCS #8) for
// storage. The result is secret.
func MarshalDKIMKey(key crypto.Signer) ([]byte, error) {
	if _, err := DKIMKeyAlgorithm(key); err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("delivery: marshal DKIM key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParseDKIMKey decodes a PEM private key: PKCS #8 ("PRIVATE KEY", RSA or
// Ed25519) or PKCS #1 ("RSA PRIVATE KEY", as written by openssl genrsa).
func ParseDKIMKey(pemBytes []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("delivery: DKIM key is not PEM")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("delivery: unsupported PEM block %q for a DKIM key", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("delivery: parse DKIM key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("delivery: unsupported DKIM key type %T", key)
	}
	if _, err := DKIMKeyAlgorithm(signer); err != nil {
		return nil, err
	}
	if k, ok := signer.(*rsa.PrivateKey); ok && k.N.BitLen() < 1024 {
		return nil, fmt.Errorf("delivery: RSA DKIM key of %d bits is too short", k.N.BitLen())
	}
	return signer, nil
}

// DKIMRecord returns the DNS TXT record value that publishes the public half
// of key (private or public): "v=DKIM1; k=rsa; p=<base64 SubjectPublicKeyInfo>"
// or "v=DKIM1; k=ed25519; p=<base64 raw 32-byte key>" (RFC 8463 §4.2).
// Values longer than 255 octets must be published as several strings of one
// TXT record; see SplitTXT.
func DKIMRecord(key any) (string, error) {
	if s, ok := key.(crypto.Signer); ok {
		key = s.Public()
	}
	switch pub := key.(type) {
	case *rsa.PublicKey:
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			return "", err
		}
		return "v=DKIM1; k=rsa; p=" + base64.StdEncoding.EncodeToString(der), nil
	case ed25519.PublicKey:
		return "v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(pub), nil
	default:
		return "", fmt.Errorf("delivery: unsupported DKIM key type %T", key)
	}
}

// SplitTXT splits a TXT record value into strings of at most 255 octets, the
// limit of one DNS character-string. Resolvers concatenate them again.
func SplitTXT(value string) []string {
	var out []string
	for len(value) > 255 {
		out = append(out, value[:255])
		value = value[255:]
	}
	return append(out, value)
}

// DKIMSelector returns a selector name for a key created at t, such as
// "lasso202611r" for prefix "lasso" and RSA: a new date-stamped selector per
// rotation lets the old and new keys be published side by side.
func DKIMSelector(prefix string, alg DKIMAlgorithm, t time.Time) string {
	suffix := "r"
	if alg == DKIMEd25519 {
		suffix = "e"
	}
	return prefix + t.UTC().Format("200601") + suffix
}

// DKIMRecordName returns the DNS name of a selector's key record:
// "<selector>._domainkey.<domain>".
func DKIMRecordName(selector, domain string) string {
	return selector + "._domainkey." + strings.TrimSuffix(domain, ".")
}

// DKIMKey is one signing identity.
type DKIMKey struct {
	// Domain is the signing domain (d=), normally the From domain so that
	// the signature aligns for DMARC.
	Domain string
	// Selector (s=) names the key record under Domain.
	Selector string
	// Signer is the private key (*rsa.PrivateKey or ed25519.PrivateKey).
	Signer crypto.Signer
}

// dkimSignedHeaders are signed when present. Fields marked true are also
// "over-signed" (listed once more than they occur) so that a field of that
// name cannot be added in transit without breaking the signature (RFC 6376
// §8.15).
var dkimSignedHeaders = []struct {
	name     string
	oversign bool
}{
	{"From", true},
	{"Reply-To", true},
	{"Subject", true},
	{"Date", true},
	{"To", true},
	{"Cc", true},
	{"Message-ID", true},
	{"In-Reply-To", false},
	{"References", false},
	{"MIME-Version", true},
	{"Content-Type", true},
	{"Content-Transfer-Encoding", true},
	{"List-Unsubscribe", true},
	{"List-Unsubscribe-Post", true},
	{"List-Id", true},
	{"Feedback-ID", true},
}

// SignDKIM returns msg with one DKIM-Signature field per key prepended,
// relaxed/relaxed canonicalisation, SHA-256. Pass the RSA key first and,
// optionally, an Ed25519 key for dual signing (RFC 8463 §3). Extra headers
// such as X-Lasso-Send-ID are not signed.
func SignDKIM(msg []byte, keys ...DKIMKey) ([]byte, error) {
	if len(keys) == 0 {
		return msg, nil
	}
	headerKeys, err := dkimHeaderKeys(msg)
	if err != nil {
		return nil, err
	}
	signers := make([]*dkim.Signer, len(keys))
	for i, k := range keys {
		if k.Domain == "" || k.Selector == "" || k.Signer == nil {
			closeSigners(signers[:i])
			return nil, errors.New("delivery: DKIM key needs Domain, Selector and Signer")
		}
		s, err := dkim.NewSigner(&dkim.SignOptions{
			Domain:                 k.Domain,
			Selector:               k.Selector,
			Signer:                 k.Signer,
			HeaderCanonicalization: dkim.CanonicalizationRelaxed,
			BodyCanonicalization:   dkim.CanonicalizationRelaxed,
			HeaderKeys:             headerKeys,
		})
		if err != nil {
			closeSigners(signers[:i])
			return nil, fmt.Errorf("delivery: dkim %s: %w", k.Selector, err)
		}
		signers[i] = s
	}
	// Each signer hashes in its own goroutine behind a pipe; feed them
	// concurrently so dual signing costs max(RSA, Ed25519), not the sum.
	errs := make([]error, len(signers))
	var wg sync.WaitGroup
	for i, s := range signers[1:] {
		wg.Go(func() { _, errs[i+1] = s.Write(msg) })
	}
	_, errs[0] = signers[0].Write(msg)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeSigners(signers)
		return nil, fmt.Errorf("delivery: dkim sign: %w", err)
	}
	var sigs []string
	size := len(msg)
	for i, s := range signers {
		if err := s.Close(); err != nil {
			closeSigners(signers[i+1:])
			return nil, fmt.Errorf("delivery: dkim sign %s: %w", keys[i].Selector, err)
		}
		sig := s.Signature()
		sigs = append(sigs, sig)
		size += len(sig)
	}
	out := make([]byte, 0, size)
	for _, sig := range sigs {
		out = append(out, sig...)
	}
	return append(out, msg...), nil
}

func closeSigners(s []*dkim.Signer) {
	for _, x := range s {
		if x != nil {
			_ = x.Close()
		}
	}
}

// dkimHeaderKeys lists the h= tag for msg: each signed field as often as it
// occurs, plus once more for over-signed ones.
func dkimHeaderKeys(msg []byte) ([]string, error) {
	end := bytes.Index(msg, []byte("\r\n\r\n"))
	if end < 0 {
		end = len(msg)
	}
	h, err := textproto.NewReader(bufio.NewReader(bytes.NewReader(append(msg[:end:end], "\r\n\r\n"...)))).ReadMIMEHeader()
	if err != nil && len(h) == 0 {
		return nil, fmt.Errorf("delivery: dkim: read header: %w", err)
	}
	var keys []string
	for _, f := range dkimSignedHeaders {
		n := len(h.Values(f.name))
		if f.oversign && n > 0 {
			n++
		}
		for range n {
			keys = append(keys, f.name)
		}
	}
	if len(keys) == 0 || keys[0] != "From" {
		return nil, errors.New("delivery: dkim: message has no From field")
	}
	return keys, nil
}
