// Package content owns what a sent email is made of, as the content API
// (spec §5.7–§5.12, §5.17) exposes it: transactional emails and their email
// messages (draft and published versions), themes, components, campaign and
// transactional groups, and image uploads. It compiles LMX with package lmx
// and checks messages with package guardian; sending is someone else's job
// (PublishedTransactional and PreviewSender are the seams).
package content

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
	"github.com/lasso-mail/lasso/internal/senders"
)

// Domains is what the service needs to know about a team's sending domains.
// *senders.Service implements it.
type Domains interface {
	Domains(ctx context.Context, teamID string) ([]senders.Domain, error)
}

// PreviewSender sends one rendered preview email to a list of addresses.
// The outbound pipeline implements it.
type PreviewSender interface {
	SendPreview(ctx context.Context, teamID string, to []string, subject, html, text, fromName, fromEmail, replyTo string) error
}

// Config configures a Service.
type Config struct {
	// PublicURL is the base of resource url fields, pre-signed upload URLs
	// and asset URLs (no trailing slash).
	PublicURL string
	Domains   Domains
	// ContactProperties lists a team's custom contact property names
	// (for Guardian and component variable checks); nil means none.
	ContactProperties func(ctx context.Context, teamID string) ([]string, error)
	// Blobs stores uploaded files.
	Blobs BlobStore
	// Preview sends previews; nil makes the preview endpoint answer 501
	// until SetPreviewSender is called.
	Preview PreviewSender
	// PreviewLimit is preview emails per team per rolling 24 h (default 100).
	PreviewLimit int
	// UploadLimit is completed uploads per team per rolling 24 h (default 50).
	UploadLimit int
	// UploadURLTTL is how long a pre-signed upload URL is valid (default 1 h).
	UploadURLTTL time.Duration
	Logger       *slog.Logger
	Now          func() time.Time
}

// Service manages email content.
type Service struct {
	db  db.DB
	cfg Config

	mu       sync.Mutex
	preview  PreviewSender
	ensured  map[string]bool       // teams whose default rows exist
	compiled map[string]*Published // published message id → compiled
	drafts   map[string]draftEntry // workflow message id → compiled (workflow_message.go)
	secret   []byte                // upload signing key
}

// New returns a Service.
func New(d db.DB, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.PreviewLimit == 0 {
		cfg.PreviewLimit = 100
	}
	if cfg.UploadLimit == 0 {
		cfg.UploadLimit = 50
	}
	if cfg.UploadURLTTL == 0 {
		cfg.UploadURLTTL = time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.PublicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	return &Service{db: d, cfg: cfg, preview: cfg.Preview, ensured: map[string]bool{}, compiled: map[string]*Published{}, drafts: map[string]draftEntry{}}
}

// SetPreviewSender sets (or replaces) the preview sender.
func (s *Service) SetPreviewSender(p PreviewSender) {
	s.mu.Lock()
	s.preview = p
	s.mu.Unlock()
}

// PublicURL is the base URL of the service's links.
func (s *Service) PublicURL() string { return s.cfg.PublicURL }

func (s *Service) now() time.Time { return s.cfg.Now() }

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// ErrNoDomain is returned by every content operation of a team without a
// sending domain (§5.7).
var errNoDomain = apperr.New(apperr.Invalid, "No sending domain configured. Add a sending domain to use the content API.")

// Begin checks that the team may use the content API (it has a sending
// domain) and makes sure its default rows exist (the Unsorted groups and
// the default theme). Every content operation calls it first.
func (s *Service) Begin(ctx context.Context, teamID string) error {
	ds, err := s.cfg.Domains.Domains(ctx, teamID)
	if err != nil {
		return err
	}
	if len(ds) == 0 {
		return errNoDomain
	}
	return s.ensureDefaults(ctx, teamID)
}

// DefaultGroupName is the reserved name of each team's default group.
const DefaultGroupName = "Unsorted"

// DefaultThemeName is the name of each team's built-in theme.
const DefaultThemeName = "Default"

func (s *Service) ensureDefaults(ctx context.Context, teamID string) error {
	s.mu.Lock()
	done := s.ensured[teamID]
	s.mu.Unlock()
	if done {
		return nil
	}
	now := ms(s.now())
	styles, err := json.Marshal(defaultThemeStyles())
	if err != nil {
		return err
	}
	err = s.db.InTx(ctx, func(tx db.Tx) error {
		for _, kind := range []string{GroupCampaign, GroupTransactional} {
			if _, err := tx.Exec(ctx, `INSERT INTO content_groups (id, team_id, kind, name, description, is_default, created_at, updated_at)
				VALUES ($1, $2, $3, $4, '', TRUE, $5, $5) ON CONFLICT DO NOTHING`, ids.New(), teamID, kind, DefaultGroupName, now); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO themes (id, team_id, name, styles, is_default, created_at, updated_at)
			VALUES ($1, $2, $3, $4, TRUE, $5, $5) ON CONFLICT DO NOTHING`, ids.New(), teamID, DefaultThemeName, string(styles), now)
		return err
	})
	if err != nil {
		return fmt.Errorf("ensure default content rows: %w", err)
	}
	s.mu.Lock()
	s.ensured[teamID] = true
	s.mu.Unlock()
	return nil
}

// Page and List are the keyset pagination of every list (db.Paginate).
type (
	Page        = db.Page
	List[T any] = db.List[T]
)

// ider is implemented by every listed type.
type ider interface{ id() string }

// paginate lists rows of table matching where (which uses $1…$len(args))
// newest first, with keyset pagination on (created_at, id).
func paginate[T ider](ctx context.Context, q db.Querier, table, cols, where string, args []any, p Page, scan func(db.Rows) (T, error)) (List[T], error) {
	return db.Paginate(ctx, q, db.Listing{Table: table, Cols: cols, Where: where, Args: args}, p, scan, T.id)
}

// checkID returns 400 for something that cannot be an id.
func checkID(id, what string) error {
	if !ids.Valid(id) {
		return apperr.New(apperr.Invalid, "Invalid %s id.", what)
	}
	return nil
}

// quota counts the units of kind a team used in the last window (with used,
// or from content_quota_events when used is nil) and, when n more fit within
// limit, records them (events only), all under a per-team lock row so that
// concurrent nodes cannot both pass. It returns false when the quota is used
// up.
func (s *Service) quota(ctx context.Context, tx db.Tx, teamID, kind string, n, limit int, window time.Duration, used func() (int, error)) (bool, error) {
	now := ms(s.now())
	if _, err := tx.Exec(ctx, `INSERT INTO content_quota_locks (team_id, kind, touched_at) VALUES ($1, $2, $3)
		ON CONFLICT (team_id, kind) DO UPDATE SET touched_at = excluded.touched_at`, teamID, kind, now); err != nil {
		return false, err
	}
	var u int
	var err error
	if used != nil {
		u, err = used()
	} else {
		err = tx.QueryRow(ctx, `SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM content_quota_events WHERE team_id = $1 AND kind = $2 AND created_at > $3`,
			teamID, kind, now-window.Milliseconds()).Scan(&u)
	}
	if err != nil {
		return false, err
	}
	if u+n > limit {
		return false, nil
	}
	if used == nil {
		if _, err := tx.Exec(ctx, `INSERT INTO content_quota_events (id, team_id, kind, n, created_at) VALUES ($1, $2, $3, $4, $5)`,
			ids.New(), teamID, kind, n, now); err != nil {
			return false, err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM content_quota_events WHERE team_id = $1 AND kind = $2 AND created_at <= $3`,
			teamID, kind, now-window.Milliseconds()); err != nil {
			return false, err
		}
	}
	return true, nil
}

func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func nullableJSON(m map[string]string) (any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	return jsonText(m)
}

func parseJSONMap(s *string) map[string]string {
	if s == nil || *s == "" {
		return nil
	}
	var m map[string]string
	if json.Unmarshal([]byte(*s), &m) != nil || len(m) == 0 {
		return nil
	}
	return m
}
