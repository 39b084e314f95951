// Package accounts owns teams and API keys. Keys are random, shown once, and
// stored only as SHA-256 hashes (they carry 160 bits of entropy, so a fast
// hash is safe and keeps authentication cheap on every request).
package accounts

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
)

// Team is a tenant: every other record belongs to one.
type Team struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// Key describes an API key (never the key itself).
type Key struct {
	ID         string
	TeamID     string
	TeamName   string
	Name       string
	Prefix     string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// KeyPrefix starts every API key.
const KeyPrefix = "lso_"

// Service manages teams and keys.
type Service struct {
	db  db.DB
	now func() time.Time

	mu       sync.Mutex
	lastUsed map[string]time.Time // key id → last time we wrote last_used_at
}

// New returns a Service. now may be nil (time.Now).
func New(d db.DB, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{db: d, now: now, lastUsed: map[string]time.Time{}}
}

// EnsureTeam returns the team called name, creating it if absent.
func (s *Service) EnsureTeam(ctx context.Context, name string) (Team, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return Team{}, apperr.New(apperr.Invalid, "A team name is required.")
	}
	t := Team{ID: ids.New(), Name: name, CreatedAt: s.now().UTC()}
	_, err := s.db.Exec(ctx, `INSERT INTO teams (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`,
		t.ID, t.Name, t.CreatedAt.UnixMilli())
	if err != nil {
		return Team{}, fmt.Errorf("ensure team: %w", err)
	}
	return s.TeamByName(ctx, name)
}

// TeamByName returns apperr.NotFound if there is no such team.
func (s *Service) TeamByName(ctx context.Context, name string) (Team, error) {
	var t Team
	var created int64
	err := s.db.QueryRow(ctx, `SELECT id, name, created_at FROM teams WHERE name = $1`, name).Scan(&t.ID, &t.Name, &created)
	if errors.Is(err, db.ErrNoRows) {
		return Team{}, apperr.New(apperr.NotFound, "Team %q not found.", name)
	}
	if err != nil {
		return Team{}, fmt.Errorf("team by name: %w", err)
	}
	t.CreatedAt = time.UnixMilli(created).UTC()
	return t, nil
}

// CreateKey makes a new key for team and returns it in clear (the only time).
func (s *Service) CreateKey(ctx context.Context, teamID, name string) (string, Key, error) {
	var raw [20]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", Key{}, err
	}
	secret := KeyPrefix + hex.EncodeToString(raw[:])
	k := Key{ID: ids.New(), TeamID: teamID, Name: strings.TrimSpace(name), Prefix: secret[:len(KeyPrefix)+6], CreatedAt: s.now().UTC()}
	if k.Name == "" {
		k.Name = "API key"
	}
	_, err := s.db.Exec(ctx, `INSERT INTO api_keys (id, team_id, name, key_hash, key_prefix, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		k.ID, k.TeamID, k.Name, hashKey(secret), k.Prefix, k.CreatedAt.UnixMilli())
	if err != nil {
		return "", Key{}, fmt.Errorf("create key: %w", err)
	}
	return secret, k, nil
}

func hashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// ListKeys lists the keys of teamID, or of every team when teamID is "".
func (s *Service) ListKeys(ctx context.Context, teamID string) ([]Key, error) {
	rows, err := s.db.Query(ctx, `SELECT k.id, k.team_id, t.name, k.name, k.key_prefix, k.created_at, k.last_used_at, k.revoked_at
		FROM api_keys k JOIN teams t ON t.id = k.team_id
		WHERE ($1 = '' OR k.team_id = $1) ORDER BY t.name, k.created_at`, teamID)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	defer rows.Close()
	var out []Key
	for rows.Next() {
		var k Key
		var created int64
		var used, revoked *int64
		if err := rows.Scan(&k.ID, &k.TeamID, &k.TeamName, &k.Name, &k.Prefix, &created, &used, &revoked); err != nil {
			return nil, err
		}
		k.CreatedAt = time.UnixMilli(created).UTC()
		k.LastUsedAt = msPtr(used)
		k.RevokedAt = msPtr(revoked)
		out = append(out, k)
	}
	return out, rows.Err()
}

func msPtr(v *int64) *time.Time {
	if v == nil {
		return nil
	}
	t := time.UnixMilli(*v).UTC()
	return &t
}

// RevokeKey revokes the key whose id or displayed prefix is idOrPrefix.
func (s *Service) RevokeKey(ctx context.Context, idOrPrefix string) error {
	n, err := s.db.Exec(ctx, `UPDATE api_keys SET revoked_at = $1 WHERE (id = $2 OR key_prefix = $2) AND revoked_at IS NULL`,
		s.now().UnixMilli(), idOrPrefix)
	if err != nil {
		return fmt.Errorf("revoke key: %w", err)
	}
	if n == 0 {
		return apperr.New(apperr.NotFound, "No active key %q.", idOrPrefix)
	}
	return nil
}

// Authenticate returns the team of an active key, or apperr.Unauthenticated.
func (s *Service) Authenticate(ctx context.Context, secret string) (Team, error) {
	if !strings.HasPrefix(secret, KeyPrefix) || len(secret) > 200 {
		return Team{}, apperr.New(apperr.Unauthenticated, "Invalid API key")
	}
	var t Team
	var keyID string
	var revoked *int64
	err := s.db.QueryRow(ctx, `SELECT k.id, k.revoked_at, t.id, t.name FROM api_keys k JOIN teams t ON t.id = k.team_id WHERE k.key_hash = $1`,
		hashKey(secret)).Scan(&keyID, &revoked, &t.ID, &t.Name)
	if errors.Is(err, db.ErrNoRows) || (err == nil && revoked != nil) {
		return Team{}, apperr.New(apperr.Unauthenticated, "Invalid API key")
	}
	if err != nil {
		return Team{}, fmt.Errorf("authenticate: %w", err)
	}
	s.touch(ctx, keyID)
	return t, nil
}

// touch records last use at most once a minute per key and node, so that
// authentication does not write on every request.
func (s *Service) touch(ctx context.Context, keyID string) {
	now := s.now()
	s.mu.Lock()
	last, ok := s.lastUsed[keyID]
	if ok && now.Sub(last) < time.Minute {
		s.mu.Unlock()
		return
	}
	s.lastUsed[keyID] = now
	s.mu.Unlock()
	_, _ = s.db.Exec(ctx, `UPDATE api_keys SET last_used_at = $1 WHERE id = $2`, now.UnixMilli(), keyID)
}
