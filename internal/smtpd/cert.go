package smtpd

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// SelfSignedCertFile is where LoadOrCreateCert keeps the generated
// certificate and its key (one PEM file, so it is replaced atomically),
// relative to the data directory.
const SelfSignedCertFile = "tls/smtp.pem"

// selfSignedValidity is how long a generated certificate lasts; it is
// regenerated a month before it expires.
const selfSignedValidity = 10 * 365 * 24 * time.Hour

// LoadOrCreateCert returns the TLS config for STARTTLS. With certFile and
// keyFile it loads that pair. Otherwise it uses the self-signed ECDSA P-256
// certificate for hostname kept in <dataDir>/tls/smtp.pem, generating it the
// first time (and when it is about to expire). Clients must then skip
// verification (nodemailer tls.rejectUnauthorized=false, swaks does not
// verify), which is how Loops-style submission to a private host usually runs.
func LoadOrCreateCert(certFile, keyFile, dataDir, hostname string) (*tls.Config, error) {
	if certFile != "" || keyFile != "" {
		if certFile == "" || keyFile == "" {
			return nil, errors.New("smtp tls: both a certificate and a key file are needed")
		}
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("smtp tls: load %s: %w", certFile, err)
		}
		return tlsConfig(cert), nil
	}
	if dataDir == "" {
		return nil, errors.New("smtp tls: no certificate files and no data directory for a self-signed one")
	}
	if hostname == "" {
		hostname = "localhost"
	}
	path := filepath.Join(dataDir, filepath.FromSlash(SelfSignedCertFile))
	pemBytes, err := os.ReadFile(path)
	switch {
	case err == nil:
		cert, lerr := tls.X509KeyPair(pemBytes, pemBytes)
		if lerr != nil {
			return nil, fmt.Errorf("smtp tls: %s: %w (delete it to generate a new one)", path, lerr)
		}
		if cert.Leaf != nil && time.Now().Before(cert.Leaf.NotAfter.Add(-30*24*time.Hour)) {
			return tlsConfig(cert), nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("smtp tls: %w", err)
	}
	pemBytes, err = selfSigned(hostname, time.Now())
	if err != nil {
		return nil, fmt.Errorf("smtp tls: generate certificate: %w", err)
	}
	if err := writeFileAtomic(path, pemBytes); err != nil {
		return nil, fmt.Errorf("smtp tls: %w", err)
	}
	cert, err := tls.X509KeyPair(pemBytes, pemBytes)
	if err != nil {
		return nil, fmt.Errorf("smtp tls: %w", err)
	}
	return tlsConfig(cert), nil
}

func tlsConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

// selfSigned returns a PEM certificate and PKCS#8 key for hostname.
func selfSigned(hostname string, now time.Time) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: hostname, Organization: []string{"Lasso self-signed"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(selfSignedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	if ip := net.ParseIP(hostname); ip != nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	} else {
		tmpl.DNSNames = append(tmpl.DNSNames, hostname)
	}
	if hostname != "localhost" {
		tmpl.DNSNames = append(tmpl.DNSNames, "localhost")
	}
	tmpl.IPAddresses = append(tmpl.IPAddresses, net.IPv4(127, 0, 0, 1), net.IPv6loopback)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})...)
	return out, nil
}

// writeFileAtomic writes a private file through a temporary file and a
// rename, so a reader never sees half of it.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".smtp-*.pem")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op once renamed
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
