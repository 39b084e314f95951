// Package senders owns sending identities: the team's domains, their DKIM
// keys (RSA-2048 and Ed25519, generated when the domain is added) and the DNS
// records a team must publish. Live DNS verification is done by Verify with
// a resolver the caller supplies (tests point it at a fake DNS server).
package senders

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/delivery"
	"github.com/lasso-mail/lasso/internal/ids"
)

// Domain is a sending domain of a team.
type Domain struct {
	ID           string
	TeamID       string
	Domain       string
	Verified     bool
	VerifiedAt   *time.Time
	DKIMSelector string
	// RSAKeyPEM and EdKeyPEM are PKCS#8 private keys.
	RSAKeyPEM string
	EdKeyPEM  string
	CreatedAt time.Time
}

// Record is one DNS record to publish.
type Record struct {
	Purpose string // SPF, DKIM, DKIM (Ed25519), DMARC, Return-Path MX
	Type    string // TXT, MX
	Name    string
	Value   string
}

// Service manages sending domains.
type Service struct {
	db   db.DB
	now  func() time.Time
	keys keyCache
	// MailHost is the host name that receives bounces and that SPF names
	// (the host of the public URL).
	mailHost string
}

// New returns a Service.
func New(d db.DB, mailHost string, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	if mailHost == "" {
		mailHost = "localhost"
	}
	return &Service{db: d, now: now, mailHost: mailHost}
}

var domainRe = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)

// Add registers a domain for a team with fresh DKIM keys.
func (s *Service) Add(ctx context.Context, teamID, domain string, verified bool) (Domain, error) {
	domain = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(domain)), ".")
	if !domainRe.MatchString(domain) {
		return Domain{}, apperr.New(apperr.Invalid, "Invalid domain %q.", domain)
	}
	d := Domain{ID: ids.New(), TeamID: teamID, Domain: domain, Verified: verified,
		DKIMSelector: "lasso" + s.now().UTC().Format("200601"), CreatedAt: s.now().UTC()}
	for _, k := range []struct {
		alg delivery.DKIMAlgorithm
		dst *string
	}{{delivery.DKIMRSA, &d.RSAKeyPEM}, {delivery.DKIMEd25519, &d.EdKeyPEM}} {
		key, err := delivery.GenerateDKIMKey(k.alg)
		if err != nil {
			return Domain{}, err
		}
		pem, err := delivery.MarshalDKIMKey(key)
		if err != nil {
			return Domain{}, err
		}
		*k.dst = string(pem)
	}
	var verifiedAt *int64
	if verified {
		ms := d.CreatedAt.UnixMilli()
		verifiedAt = &ms
		t := d.CreatedAt
		d.VerifiedAt = &t
	}
	_, err := s.db.Exec(ctx, `INSERT INTO sending_domains (id, team_id, domain, verified, verified_at, dkim_selector, dkim_rsa_key, dkim_ed_key, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		d.ID, teamID, domain, verified, verifiedAt, d.DKIMSelector, d.RSAKeyPEM, d.EdKeyPEM, d.CreatedAt.UnixMilli())
	if db.IsUnique(err) {
		return Domain{}, apperr.New(apperr.Conflict, "The domain %s is already registered.", domain)
	}
	if err != nil {
		return Domain{}, fmt.Errorf("add domain: %w", err)
	}
	return d, nil
}

// Domains lists a team's domains.
func (s *Service) Domains(ctx context.Context, teamID string) ([]Domain, error) {
	rows, err := s.db.Query(ctx, `SELECT id, team_id, domain, verified, verified_at, dkim_selector, dkim_rsa_key, dkim_ed_key, created_at
		FROM sending_domains WHERE team_id = $1 ORDER BY created_at`, teamID)
	if err != nil {
		return nil, fmt.Errorf("list domains: %w", err)
	}
	defer rows.Close()
	var out []Domain
	for rows.Next() {
		var d Domain
		var created int64
		var verifiedAt *int64
		if err := rows.Scan(&d.ID, &d.TeamID, &d.Domain, &d.Verified, &verifiedAt, &d.DKIMSelector, &d.RSAKeyPEM, &d.EdKeyPEM, &created); err != nil {
			return nil, err
		}
		d.CreatedAt = time.UnixMilli(created).UTC()
		if verifiedAt != nil {
			t := time.UnixMilli(*verifiedAt).UTC()
			d.VerifiedAt = &t
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// HasDomain reports whether the team has at least one sending domain.
func (s *Service) HasDomain(ctx context.Context, teamID string) (bool, error) {
	var one int
	err := s.db.QueryRow(ctx, `SELECT 1 FROM sending_domains WHERE team_id = $1 LIMIT 1`, teamID).Scan(&one)
	if errors.Is(err, db.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// RSASelector and EdSelector name the domain's two DKIM key records.
func (d Domain) RSASelector() string { return d.DKIMSelector + "r" }
func (d Domain) EdSelector() string  { return d.DKIMSelector + "e" }

// SigningKeys returns the domain's DKIM keys, RSA first (always verified by
// receivers), then Ed25519 (RFC 8463, in addition).
func (d Domain) SigningKeys() ([]delivery.DKIMKey, error) {
	return d.signingKeys(func(pem string) (crypto.Signer, error) { return delivery.ParseDKIMKey([]byte(pem)) })
}

func (d Domain) signingKeys(parse func(pem string) (crypto.Signer, error)) ([]delivery.DKIMKey, error) {
	rsa, err := parse(d.RSAKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("dkim key of %s: %w", d.Domain, err)
	}
	ed, err := parse(d.EdKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("dkim key of %s: %w", d.Domain, err)
	}
	return []delivery.DKIMKey{
		{Domain: d.Domain, Selector: d.RSASelector(), Signer: rsa},
		{Domain: d.Domain, Selector: d.EdSelector(), Signer: ed},
	}, nil
}

// ByDomain returns the registered domain (of any team) named domain;
// apperr.NotFound if none.
func (s *Service) ByDomain(ctx context.Context, teamID, domain string) (Domain, error) {
	ds, err := s.Domains(ctx, teamID)
	if err != nil {
		return Domain{}, err
	}
	domain = strings.ToLower(domain)
	for _, d := range ds {
		if d.Domain == domain {
			return d, nil
		}
	}
	return Domain{}, apperr.New(apperr.NotFound, "The domain %s is not a sending domain of this team.", domain)
}

// BounceDomain is where the return path of mail from domain points.
func BounceDomain(domain string) string { return "bounces." + domain }

// Records returns the DNS records to publish for d.
func (s *Service) Records(d Domain) ([]Record, error) {
	keys, err := d.SigningKeys()
	if err != nil {
		return nil, err
	}
	rsaRec, err := delivery.DKIMRecord(keys[0].Signer)
	if err != nil {
		return nil, err
	}
	edRec, err := delivery.DKIMRecord(keys[1].Signer)
	if err != nil {
		return nil, err
	}
	return []Record{
		{Purpose: "SPF", Type: "TXT", Name: d.Domain, Value: "v=spf1 a:" + s.mailHost + " ~all"},
		{Purpose: "DKIM", Type: "TXT", Name: delivery.DKIMRecordName(d.RSASelector(), d.Domain), Value: rsaRec},
		{Purpose: "DKIM (Ed25519)", Type: "TXT", Name: delivery.DKIMRecordName(d.EdSelector(), d.Domain), Value: edRec},
		{Purpose: "DMARC", Type: "TXT", Name: "_dmarc." + d.Domain, Value: "v=DMARC1; p=none; rua=mailto:dmarc@" + d.Domain},
		{Purpose: "Return-Path MX", Type: "MX", Name: BounceDomain(d.Domain), Value: "10 " + s.mailHost + "."},
	}, nil
}

// SigningKeys returns the DKIM keys of the team's sending domain (nil when
// the domain is not registered: the message goes out unsigned).
func (s *Service) SigningKeys(ctx context.Context, teamID, domain string) ([]delivery.DKIMKey, error) {
	d, err := s.ByDomain(ctx, teamID, domain)
	if errors.Is(err, apperr.NotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return d.signingKeys(s.keys.parse)
}

// keyCache keeps DKIM private keys parsed, by their PEM text. Parsing and
// checking an RSA-2048 key costs about as much as signing with it, and
// every send signs: without the cache a fifth of the CPU of sending went to
// parsing the same key again. A new or rotated key is a new PEM text; the
// cache starts over past maxKeys entries.
type keyCache struct {
	mu sync.Mutex
	m  map[string]crypto.Signer
}

const maxKeys = 1024

func (c *keyCache) parse(pem string) (crypto.Signer, error) {
	c.mu.Lock()
	k, ok := c.m[pem]
	c.mu.Unlock()
	if ok {
		return k, nil
	}
	k, err := delivery.ParseDKIMKey([]byte(pem))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxKeys {
		c.m = map[string]crypto.Signer{}
	}
	c.m[pem] = k
	c.mu.Unlock()
	return k, nil
}

// IsVerified reports whether domain is a verified sending domain of the team.
func (s *Service) IsVerified(ctx context.Context, teamID, domain string) (bool, error) {
	d, err := s.ByDomain(ctx, teamID, domain)
	if errors.Is(err, apperr.NotFound) {
		return false, nil
	}
	return d.Verified, err
}
