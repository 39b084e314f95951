package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
)

// store holds the dashboard's own tables (users, sessions, invites, setup
// tokens, login failures, domain checks, CSV imports).
type store struct {
	db  db.DB
	now func() time.Time
}

// User is a person who logs in to the dashboard.
type User struct {
	ID       string
	TeamID   string
	TeamName string
	Email    string
	Name     string
	Role     string // owner or member
	Created  time.Time
}

const (
	roleOwner  = "owner"
	roleMember = "member"

	sessionTTL     = 14 * 24 * time.Hour
	sessionRefresh = 10 * time.Minute
	inviteTTL      = 7 * 24 * time.Hour
)

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func hashToken(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

func (s *store) userCount(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM users`).Scan(&n)
	return n, err
}

func (s *store) newSetupToken(ctx context.Context) (string, error) {
	tok := randomToken()
	_, err := s.db.Exec(ctx, `INSERT INTO setup_tokens (token_hash, created_at) VALUES ($1, $2)`, hashToken(tok), s.now().UnixMilli())
	return tok, err
}

func (s *store) setupTokenValid(ctx context.Context, tok string) (bool, error) {
	var one int
	err := s.db.QueryRow(ctx, `SELECT 1 FROM setup_tokens WHERE token_hash = $1`, hashToken(tok)).Scan(&one)
	if errors.Is(err, db.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// setup creates the first team and its owner, consuming every setup token.
// It fails with apperr.Conflict if a user exists already or the token is
// not valid.
func (s *store) setup(ctx context.Context, tok, teamName, email, name, passwordHash string) (User, error) {
	u := User{ID: ids.New(), Email: email, Name: name, Role: roleOwner, TeamName: teamName, Created: s.now().UTC()}
	err := s.db.InTx(ctx, func(tx db.Tx) error {
		n, err := tx.Exec(ctx, `DELETE FROM setup_tokens WHERE token_hash = $1`, hashToken(tok))
		if err != nil {
			return err
		}
		if n == 0 {
			return apperr.New(apperr.Conflict, "This setup link is not valid (any more).")
		}
		var users int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM users`).Scan(&users); err != nil {
			return err
		}
		if users > 0 {
			return apperr.New(apperr.Conflict, "Setup is already done: log in instead.")
		}
		if _, err := tx.Exec(ctx, `DELETE FROM setup_tokens`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO teams (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`,
			ids.New(), teamName, u.Created.UnixMilli()); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT id FROM teams WHERE name = $1`, teamName).Scan(&u.TeamID); err != nil {
			return err
		}
		return insertUser(ctx, tx, u, passwordHash)
	})
	return u, err
}

func insertUser(ctx context.Context, q db.Querier, u User, passwordHash string) error {
	_, err := q.Exec(ctx, `INSERT INTO users (id, team_id, email, name, password_hash, role, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		u.ID, u.TeamID, u.Email, u.Name, passwordHash, u.Role, u.Created.UnixMilli())
	if db.IsUnique(err) {
		return apperr.New(apperr.Conflict, "A user with this email address exists already.")
	}
	return err
}

const userCols = `u.id, u.team_id, t.name, u.email, u.name, u.role, u.created_at`

func scanUser(r interface{ Scan(...any) error }, extra ...any) (User, error) {
	var u User
	var created int64
	err := r.Scan(append([]any{&u.ID, &u.TeamID, &u.TeamName, &u.Email, &u.Name, &u.Role, &created}, extra...)...)
	u.Created = time.UnixMilli(created).UTC()
	return u, err
}

// userByEmail returns the user and password hash; apperr.NotFound if none.
func (s *store) userByEmail(ctx context.Context, email string) (User, string, error) {
	var hash string
	u, err := scanUser(s.db.QueryRow(ctx, `SELECT `+userCols+`, u.password_hash FROM users u JOIN teams t ON t.id = u.team_id WHERE u.email = $1`, email), &hash)
	if errors.Is(err, db.ErrNoRows) {
		return User{}, "", apperr.New(apperr.NotFound, "No such user.")
	}
	return u, hash, err
}

func (s *store) teamUsers(ctx context.Context, teamID string) ([]User, error) {
	rows, err := s.db.Query(ctx, `SELECT `+userCols+` FROM users u JOIN teams t ON t.id = u.team_id WHERE u.team_id = $1 ORDER BY u.created_at`, teamID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []User
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// session is a logged-in browser.
type session struct {
	User     User
	CSRF     string
	LastSeen time.Time
	hash     string
}

func (s *store) newSession(ctx context.Context, userID string) (string, error) {
	tok := randomToken()
	now := s.now()
	_, err := s.db.Exec(ctx, `INSERT INTO sessions (token_hash, user_id, csrf_token, created_at, last_seen_at, expires_at) VALUES ($1, $2, $3, $4, $4, $5)`,
		hashToken(tok), userID, randomToken(), now.UnixMilli(), now.Add(sessionTTL).UnixMilli())
	return tok, err
}

// session returns the live session of the cookie token, or nil. It slides
// the expiry at most every sessionRefresh.
func (s *store) session(ctx context.Context, tok string) (*session, error) {
	h := hashToken(tok)
	var lastSeen, expires int64
	ss := &session{hash: h}
	u, err := scanUser(s.db.QueryRow(ctx, `SELECT `+userCols+`, s.csrf_token, s.last_seen_at, s.expires_at
		FROM sessions s JOIN users u ON u.id = s.user_id JOIN teams t ON t.id = u.team_id WHERE s.token_hash = $1`, h),
		&ss.CSRF, &lastSeen, &expires)
	if errors.Is(err, db.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := s.now()
	if now.UnixMilli() >= expires {
		_, _ = s.db.Exec(ctx, `DELETE FROM sessions WHERE token_hash = $1`, h)
		return nil, nil
	}
	ss.User = u
	ss.LastSeen = time.UnixMilli(lastSeen)
	if now.Sub(ss.LastSeen) > sessionRefresh {
		_, _ = s.db.Exec(ctx, `UPDATE sessions SET last_seen_at = $2, expires_at = $3 WHERE token_hash = $1`, h, now.UnixMilli(), now.Add(sessionTTL).UnixMilli())
	}
	return ss, nil
}

func (s *store) deleteSession(ctx context.Context, tok string) error {
	_, err := s.db.Exec(ctx, `DELETE FROM sessions WHERE token_hash = $1`, hashToken(tok))
	return err
}

// loginFailures counts the failures of key within window.
func (s *store) loginFailures(ctx context.Context, key string, window time.Duration) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM login_failures WHERE key = $1 AND created_at > $2`, key, s.now().Add(-window).UnixMilli()).Scan(&n)
	return n, err
}

func (s *store) recordLoginFailure(ctx context.Context, window time.Duration, keys ...string) error {
	return s.db.InTx(ctx, func(tx db.Tx) error {
		now := s.now()
		// Expired rows go as new ones come: the table stays small.
		if _, err := tx.Exec(ctx, `DELETE FROM login_failures WHERE created_at < $1`, now.Add(-window).UnixMilli()); err != nil {
			return err
		}
		for _, k := range keys {
			if _, err := tx.Exec(ctx, `INSERT INTO login_failures (key, created_at) VALUES ($1, $2)`, k, now.UnixMilli()); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *store) clearLoginFailures(ctx context.Context, key string) error {
	_, err := s.db.Exec(ctx, `DELETE FROM login_failures WHERE key = $1`, key)
	return err
}

// Invite is a pending invitation.
type Invite struct {
	Email     string
	Role      string
	CreatedAt time.Time
	ExpiresAt time.Time
	Accepted  bool
}

func (s *store) newInvite(ctx context.Context, teamID, email, role, by string) (string, error) {
	tok := randomToken()
	now := s.now()
	_, err := s.db.Exec(ctx, `INSERT INTO invites (token_hash, team_id, email, role, created_by, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		hashToken(tok), teamID, email, role, by, now.UnixMilli(), now.Add(inviteTTL).UnixMilli())
	return tok, err
}

func (s *store) invites(ctx context.Context, teamID string) ([]Invite, error) {
	rows, err := s.db.Query(ctx, `SELECT email, role, created_at, expires_at, accepted_at FROM invites WHERE team_id = $1 ORDER BY created_at DESC LIMIT 50`, teamID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Invite
	for rows.Next() {
		var in Invite
		var c, e int64
		var acc *int64
		if err := rows.Scan(&in.Email, &in.Role, &c, &e, &acc); err != nil {
			return nil, err
		}
		in.CreatedAt, in.ExpiresAt, in.Accepted = time.UnixMilli(c).UTC(), time.UnixMilli(e).UTC(), acc != nil
		out = append(out, in)
	}
	return out, rows.Err()
}

// invite returns the team name and email of a live invitation.
func (s *store) invite(ctx context.Context, tok string) (teamID, teamName, email, role string, err error) {
	err = s.db.QueryRow(ctx, `SELECT i.team_id, t.name, i.email, i.role FROM invites i JOIN teams t ON t.id = i.team_id
		WHERE i.token_hash = $1 AND i.accepted_at IS NULL AND i.expires_at > $2`, hashToken(tok), s.now().UnixMilli()).Scan(&teamID, &teamName, &email, &role)
	if errors.Is(err, db.ErrNoRows) {
		err = apperr.New(apperr.NotFound, "This invitation is not valid (any more).")
	}
	return
}

func (s *store) acceptInvite(ctx context.Context, tok, name, passwordHash string) (User, error) {
	var u User
	err := s.db.InTx(ctx, func(tx db.Tx) error {
		now := s.now()
		err := tx.QueryRow(ctx, `UPDATE invites SET accepted_at = $2 WHERE token_hash = $1 AND accepted_at IS NULL AND expires_at > $2 RETURNING team_id, email, role`,
			hashToken(tok), now.UnixMilli()).Scan(&u.TeamID, &u.Email, &u.Role)
		if errors.Is(err, db.ErrNoRows) {
			return apperr.New(apperr.NotFound, "This invitation is not valid (any more).")
		}
		if err != nil {
			return err
		}
		u.ID, u.Name, u.Created = ids.New(), name, now.UTC()
		return insertUser(ctx, tx, u, passwordHash)
	})
	return u, err
}

// setDomainVerified stores the outcome of a DNS check. The senders package
// owns sending_domains; the dashboard only flips its verified state.
func (s *store) setDomainCheck(ctx context.Context, teamID, domainID string, verified *bool, results string) error {
	return s.db.InTx(ctx, func(tx db.Tx) error {
		now := s.now().UnixMilli()
		if verified != nil {
			var at *int64
			if *verified {
				at = &now
			}
			n, err := tx.Exec(ctx, `UPDATE sending_domains SET verified = $1, verified_at = CASE WHEN $1 AND verified THEN verified_at ELSE $2 END WHERE id = $3 AND team_id = $4`,
				*verified, at, domainID, teamID)
			if err != nil {
				return err
			}
			if n == 0 {
				return apperr.New(apperr.NotFound, "Domain not found.")
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO domain_checks (domain_id, results, checked_at) VALUES ($1, $2, $3)
			ON CONFLICT (domain_id) DO UPDATE SET results = excluded.results, checked_at = excluded.checked_at`, domainID, results, now)
		return err
	})
}

func (s *store) domainCheck(ctx context.Context, domainID string) (string, time.Time, error) {
	var res string
	var at int64
	err := s.db.QueryRow(ctx, `SELECT results, checked_at FROM domain_checks WHERE domain_id = $1`, domainID).Scan(&res, &at)
	if errors.Is(err, db.ErrNoRows) {
		return "", time.Time{}, nil
	}
	return res, time.UnixMilli(at).UTC(), err
}

// contactEvent is an event recorded for a contact.
type contactEvent struct {
	Name       string
	Properties string
	CreatedAt  time.Time
}

// contactEvents reads the events table (owned by events) for a contact's
// page. It belongs in that package once it has a read API.
func (s *store) contactEvents(ctx context.Context, teamID, contactID string, limit int) ([]contactEvent, error) {
	rows, err := s.db.Query(ctx, `SELECT name, properties, created_at FROM events WHERE contact_id = $1 AND team_id = $2 ORDER BY created_at DESC LIMIT $3`, contactID, teamID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []contactEvent
	for rows.Next() {
		var e contactEvent
		var at int64
		if err := rows.Scan(&e.Name, &e.Properties, &at); err != nil {
			return nil, err
		}
		e.CreatedAt = time.UnixMilli(at).UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}

// contactSendIDs reads the ids of a contact's sends (owned by emails).
func (s *store) contactSendIDs(ctx context.Context, teamID, contactID string, limit int) ([]string, error) {
	rows, err := s.db.Query(ctx, `SELECT id FROM sends WHERE contact_id = $1 AND team_id = $2 ORDER BY created_at DESC LIMIT $3`, contactID, teamID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

func normEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

var errForbidden = fmt.Errorf("dashboard: %w", apperr.Forbidden)

// PruneSessions deletes expired sessions (a session is otherwise deleted
// only when its cookie comes back after expiry or at logout).
func (d *Dashboard) PruneSessions(ctx context.Context) (int64, error) {
	return db.Prune(ctx, d.store.db, "sessions", "token_hash", "expires_at < $1", "expires_at", d.now().UnixMilli())
}
