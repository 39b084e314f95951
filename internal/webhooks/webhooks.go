// Package webhooks delivers a team's outgoing webhooks: the 17 events of the
// Loops contract, signed the Standard Webhooks way (webhook-id,
// webhook-timestamp, webhook-signature "v1,<base64 HMAC-SHA256>" with a
// whsec_ secret).
//
// A domain package announces an event with Announce inside its own
// transaction: when the team's endpoint wants that event, a message row and
// a delivery job are inserted in the same transaction. The delivery worker
// POSTs the JSON body; any 2xx acknowledges it. Other answers and timeouts
// are retried on the Standard Webhooks schedule (5 s, 5 min, 30 min, 2 h,
// 5 h, 10 h, 10 h) with the same webhook-id, so receivers can deduplicate.
// Each team gets at most 10 deliveries per second per node; the excess waits.
// Messages and their attempts are kept 30 days.
//
// It is a leaf: it imports no domain package, so any domain may announce.
package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
	"github.com/lasso-mail/lasso/internal/queue"
)

// Events is the catalogue of the contract (§7.4), the only names ever sent.
var Events = []string{
	"contact.created", "contact.unsubscribed", "contact.deleted",
	"contact.mailingList.subscribed", "contact.mailingList.unsubscribed",
	"campaign.email.sent", "loop.email.sent", "transactional.email.sent",
	"email.delivered", "email.softBounced", "email.hardBounced", "email.spamReported",
	"email.opened", "email.clicked", "email.unsubscribed", "email.resubscribed",
	"testing.testEvent",
}

// SchemaVersion is sent as webhookSchemaVersion.
const SchemaVersion = "1.0.0"

// Retention is how long messages and attempts are kept.
const Retention = 30 * 24 * time.Hour

func knownEvent(name string) bool {
	for _, e := range Events {
		if e == name {
			return true
		}
	}
	return false
}

// Endpoint is a team's webhook configuration.
type Endpoint struct {
	TeamID  string
	URL     string
	Secret  string
	Enabled bool
	// Events are the enabled event names (all when the endpoint was set
	// without a list).
	Events    []string
	UpdatedAt time.Time
}

// Wants reports whether the endpoint takes the event.
func (e *Endpoint) Wants(event string) bool {
	if !e.Enabled {
		return false
	}
	for _, x := range e.Events {
		if x == event {
			return true
		}
	}
	return false
}

// DeliverArgs is the delivery job. Kind "webhook_deliver".
type DeliverArgs struct {
	MessageID string `json:"message_id"`
	TeamID    string `json:"team_id"`
}

// Kind implements queue.Args.
func (DeliverArgs) Kind() string { return "webhook_deliver" }

// Inserter is the part of the queue this package needs.
type Inserter interface {
	InsertTx(ctx context.Context, tx db.Tx, args queue.Args, opts *queue.InsertOpts) error
}

// Service configures endpoints and announces events.
type Service struct {
	db    db.DB
	queue Inserter
	now   func() time.Time
}

// New returns a Service.
func New(d db.DB, q Inserter, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{db: d, queue: q, now: now}
}

// NewSecret returns a fresh whsec_ secret (24 random bytes, base64).
func NewSecret() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "whsec_" + base64.StdEncoding.EncodeToString(b[:])
}

// Set configures (or replaces the URL and events of) the team's endpoint,
// keeping its secret if it has one. events nil means every event.
func (s *Service) Set(ctx context.Context, teamID, rawURL string, events []string) (Endpoint, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return Endpoint{}, apperr.New(apperr.Invalid, "The webhook URL must be an http(s) URL.")
	}
	if events == nil {
		events = Events
	}
	for _, e := range events {
		if !knownEvent(e) {
			return Endpoint{}, apperr.New(apperr.Invalid, "Unknown webhook event %q.", e)
		}
	}
	evJSON, _ := json.Marshal(events)
	now := s.now().UnixMilli()
	_, err = s.db.Exec(ctx, `INSERT INTO webhook_endpoints (team_id, url, secret, enabled, events, created_at, updated_at) VALUES ($1, $2, $3, TRUE, $4, $5, $5)
		ON CONFLICT (team_id) DO UPDATE SET url = excluded.url, events = excluded.events, enabled = TRUE, updated_at = excluded.updated_at`,
		teamID, u.String(), NewSecret(), string(evJSON), now)
	if err != nil {
		return Endpoint{}, fmt.Errorf("set webhook: %w", err)
	}
	return s.Get(ctx, s.db, teamID)
}

// RotateSecret replaces the endpoint's secret and returns the new one.
func (s *Service) RotateSecret(ctx context.Context, teamID string) (string, error) {
	secret := NewSecret()
	n, err := s.db.Exec(ctx, `UPDATE webhook_endpoints SET secret = $2, updated_at = $3 WHERE team_id = $1`, teamID, secret, s.now().UnixMilli())
	if err != nil {
		return "", err
	}
	if n == 0 {
		return "", apperr.New(apperr.NotFound, "No webhook endpoint is configured.")
	}
	return secret, nil
}

// SetEnabled turns the endpoint on or off.
func (s *Service) SetEnabled(ctx context.Context, teamID string, on bool) error {
	n, err := s.db.Exec(ctx, `UPDATE webhook_endpoints SET enabled = $2, updated_at = $3 WHERE team_id = $1`, teamID, on, s.now().UnixMilli())
	if err == nil && n == 0 {
		err = apperr.New(apperr.NotFound, "No webhook endpoint is configured.")
	}
	return err
}

// Get returns the team's endpoint; apperr.NotFound if none.
func (s *Service) Get(ctx context.Context, q db.Querier, teamID string) (Endpoint, error) {
	var e Endpoint
	var evJSON string
	var updated int64
	err := q.QueryRow(ctx, `SELECT team_id, url, secret, enabled, events, updated_at FROM webhook_endpoints WHERE team_id = $1`, teamID).
		Scan(&e.TeamID, &e.URL, &e.Secret, &e.Enabled, &evJSON, &updated)
	if errors.Is(err, db.ErrNoRows) {
		return Endpoint{}, apperr.New(apperr.NotFound, "No webhook endpoint is configured.")
	}
	if err != nil {
		return Endpoint{}, err
	}
	e.UpdatedAt = time.UnixMilli(updated).UTC()
	err = json.Unmarshal([]byte(evJSON), &e.Events)
	return e, err
}

// Announce records event for delivery to the team's endpoint, in tx, if the
// endpoint takes it. payload builds the event's own keys (called only when
// the endpoint wants the event); eventName, eventTime (Unix seconds) and
// webhookSchemaVersion are added here.
func (s *Service) Announce(ctx context.Context, tx db.Tx, teamID, event string, payload func() (map[string]any, error)) error {
	if !knownEvent(event) {
		return fmt.Errorf("webhooks: unknown event %q", event)
	}
	// The endpoint as last committed (one saved concurrently may be
	// missed, as it would be a moment earlier): off SQLite's writer.
	ep, err := s.Get(ctx, db.OffWriter(s.db, tx), teamID)
	if errors.Is(err, apperr.NotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("announce %s: %w", event, err)
	}
	if !ep.Wants(event) {
		return nil
	}
	fields, err := payload()
	if err != nil {
		return fmt.Errorf("announce %s: %w", event, err)
	}
	now := s.now()
	body := make(map[string]any, len(fields)+3)
	for k, v := range fields {
		body[k] = v
	}
	body["eventName"] = event
	body["eventTime"] = now.Unix()
	body["webhookSchemaVersion"] = SchemaVersion
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("announce %s: %w", event, err)
	}
	id := "msg_" + ids.New()
	if _, err := tx.Exec(ctx, `INSERT INTO webhook_messages (id, team_id, event_name, payload, status, created_at, updated_at) VALUES ($1, $2, $3, $4, 'pending', $5, $5)`,
		id, teamID, event, string(b), now.UnixMilli()); err != nil {
		return fmt.Errorf("announce %s: %w", event, err)
	}
	return s.queue.InsertTx(ctx, tx, DeliverArgs{MessageID: id, TeamID: teamID}, &queue.InsertOpts{MaxAttempts: len(retrySchedule) + 1})
}

// SendTest announces testing.testEvent (the dashboard's "send test").
func (s *Service) SendTest(ctx context.Context, teamID string) error {
	if _, err := s.Get(ctx, s.db, teamID); err != nil {
		return err
	}
	return s.db.InTx(ctx, func(tx db.Tx) error {
		return s.Announce(ctx, tx, teamID, "testing.testEvent", func() (map[string]any, error) {
			return map[string]any{"message": "test"}, nil
		})
	})
}

// Message is a delivery record.
type Message struct {
	ID             string
	Event          string
	Payload        string
	Status         string // pending, delivered, failed
	Attempts       int
	LastStatusCode *int
	LastError      *string
	CreatedAt      time.Time
}

// Messages lists a team's recent messages, newest first.
func (s *Service) Messages(ctx context.Context, teamID string, limit int) ([]Message, error) {
	rows, err := s.db.Query(ctx, `SELECT id, event_name, payload, status, attempts, last_status_code, last_error, created_at
		FROM webhook_messages WHERE team_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, teamID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var m Message
		var created int64
		if err := rows.Scan(&m.ID, &m.Event, &m.Payload, &m.Status, &m.Attempts, &m.LastStatusCode, &m.LastError, &created); err != nil {
			return nil, err
		}
		m.CreatedAt = time.UnixMilli(created).UTC()
		out = append(out, m)
	}
	return out, rows.Err()
}

// Prune deletes messages older than Retention, with their attempts (ON
// DELETE CASCADE), in batches (db.Prune). It returns how many messages it
// deleted.
func (s *Service) Prune(ctx context.Context) (int64, error) {
	return db.Prune(ctx, s.db, "webhook_messages", "id", "created_at < $1", "created_at", s.now().Add(-Retention).UnixMilli())
}

// Retry queues one more delivery of a message of the team (the dashboard's
// retry button), keeping its webhook-id. apperr.NotFound for another
// team's or an expired message.
func (s *Service) Retry(ctx context.Context, teamID, messageID string) error {
	return s.db.InTx(ctx, func(tx db.Tx) error {
		n, err := tx.Exec(ctx, `UPDATE webhook_messages SET status = 'pending', updated_at = $3 WHERE id = $1 AND team_id = $2`,
			messageID, teamID, s.now().UnixMilli())
		if err != nil {
			return err
		}
		if n == 0 {
			return apperr.New(apperr.NotFound, "Webhook message not found.")
		}
		return s.queue.InsertTx(ctx, tx, DeliverArgs{MessageID: messageID, TeamID: teamID}, &queue.InsertOpts{MaxAttempts: 1})
	})
}
