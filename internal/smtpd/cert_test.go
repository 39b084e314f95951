package smtpd_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/lasso-mail/lasso/internal/smtpd"
)

func TestLoadOrCreateCertSelfSigned(t *testing.T) {
	dir := t.TempDir()
	cfg, err := smtpd.LoadOrCreateCert("", "", dir, "mail.example.com")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.FromSlash(smtpd.SelfSignedCertFile))
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	leaf, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok {
		t.Errorf("key type %T, want ECDSA", leaf.PublicKey)
	}
	if err := leaf.VerifyHostname("mail.example.com"); err != nil {
		t.Error(err)
	}
	if err := leaf.VerifyHostname("localhost"); err != nil {
		t.Error(err)
	}
	first, _ := os.ReadFile(path)

	// Reused, not regenerated.
	cfg2, err := smtpd.LoadOrCreateCert("", "", dir, "mail.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cfg2.Certificates[0].Certificate[0], cfg.Certificates[0].Certificate[0]) {
		t.Error("certificate regenerated on the second call")
	}
	second, _ := os.ReadFile(path)
	if !bytes.Equal(first, second) {
		t.Error("file rewritten on the second call")
	}

	// The same pair as separate files, loaded explicitly.
	var certPEM, keyPEM []byte
	for rest := first; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			certPEM = pem.EncodeToMemory(b)
		} else {
			keyPEM = pem.EncodeToMemory(b)
		}
	}
	certFile, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	os.WriteFile(certFile, certPEM, 0o600)
	os.WriteFile(keyFile, keyPEM, 0o600)
	cfg3, err := smtpd.LoadOrCreateCert(certFile, keyFile, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cfg3.Certificates[0].Certificate[0], cfg.Certificates[0].Certificate[0]) {
		t.Error("explicit files not loaded")
	}
}

func TestLoadOrCreateCertErrors(t *testing.T) {
	if _, err := smtpd.LoadOrCreateCert("cert.pem", "", "", ""); err == nil {
		t.Error("a certificate without a key accepted")
	}
	if _, err := smtpd.LoadOrCreateCert("/nonexistent/c.pem", "/nonexistent/k.pem", "", ""); err == nil {
		t.Error("missing files accepted")
	}
	if _, err := smtpd.LoadOrCreateCert("", "", "", "x"); err == nil {
		t.Error("no files and no data dir accepted")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, filepath.FromSlash(smtpd.SelfSignedCertFile))
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte("garbage"), 0o600)
	if _, err := smtpd.LoadOrCreateCert("", "", dir, "x"); err == nil {
		t.Error("a corrupt certificate file silently accepted")
	}
}
