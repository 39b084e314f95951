// Package emails owns one outbound email per recipient: the send record and
// its status history, the send job (render through the source's Renderer,
// compose, DKIM-sign, hand to the transport), retries, and what results mean
// for the contact.
//
// Result semantics (the product's, per delivery issue):
//   - 2xx from the next hop: delivered.
//   - 4xx, connection and DNS trouble: soft bounce, retried with back-off
//     (Schedule); when retries run out the send fails without suppressing.
//   - 5xx saying the address itself is bad (bounce.ClassifySMTP → hard):
//     hard bounce; the address is suppressed and the contact unsubscribed.
//   - any other 5xx (spam, policy, reputation, content, size): the send fails,
//     is not retried, is reported as a soft bounce, no suppression.
//
// Asynchronous DSNs and complaints arriving at the return path go through
// ApplyReport with the same classification.
package emails

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/delivery"
	"github.com/lasso-mail/lasso/internal/ids"
	"github.com/lasso-mail/lasso/internal/queue"
)

// Statuses of a send.
const (
	StatusQueued      = "queued"
	StatusDeferred    = "deferred" // soft bounce, will retry
	StatusDelivered   = "delivered"
	StatusSoftBounced = "soft_bounced" // failed for good without suppression
	StatusHardBounced = "hard_bounced"
	StatusComplained  = "complained"
	StatusSuppressed  = "suppressed" // never sent: the address is suppressed
	StatusFailed      = "failed"
	StatusOpened      = "opened"
	StatusClicked     = "clicked"
)

// Source types, as webhooks name them.
const (
	SourceTransactional = "transactional"
	SourceCampaign      = "campaign"
	SourceLoop          = "loop"
	SourcePreview       = "preview"
)

// Queue is the job queue sends are worked on. Its worker count bounds the
// SMTP transactions in flight (each worker runs one at a time, and records
// its result before taking the next send), so a crash can re-send at most
// that many emails.
const Queue = "email"

// SendArgs is the send job. Kind "email_send".
type SendArgs struct {
	SendID string `json:"send_id"`
}

// Kind implements queue.Args.
func (SendArgs) Kind() string { return "email_send" }

// Rendered is a message ready to compose.
type Rendered struct {
	FromName, FromEmail, ReplyTo string
	Subject                      string
	HTML, Text                   string
	Attachments                  []delivery.Attachment
	EmailMessageID               string
	// Marketing mail gets List-Unsubscribe (RFC 8058) and tracking.
	Marketing bool
}

// Renderer renders the send of one source type; registered by the package
// that owns the source (transactional, campaigns, workflows).
type Renderer interface {
	Render(ctx context.Context, s *Send) (*Rendered, error)
}

// Signer finds the DKIM keys of a sending domain (nil, nil when it has none).
type Signer interface {
	SigningKeys(ctx context.Context, teamID, domain string) ([]delivery.DKIMKey, error)
}

// Announcer is the webhook announcer.
type Announcer interface {
	Announce(ctx context.Context, tx db.Tx, teamID, event string, payload func() (map[string]any, error)) error
}

// Inserter is the part of the queue emails needs.
type Inserter interface {
	InsertTx(ctx context.Context, tx db.Tx, args queue.Args, opts *queue.InsertOpts) error
}

// Send is one email to one recipient.
type Send struct {
	ID             string
	TeamID         string
	ContactID      string
	Recipient      string
	SourceType     string
	SourceID       string
	SourceName     string
	EmailMessageID string
	Subject        string
	Payload        json.RawMessage
	Status         string
	Attempts       int
	MessageID      string
	CreatedAt      time.Time
}

// New is what Enqueue needs to create a send.
type New struct {
	TeamID     string
	ContactID  string
	Recipient  string
	SourceType string
	SourceID   string
	SourceName string
	// Payload is whatever the Renderer needs (data variables, attachments…).
	Payload any
}

// Service creates sends and applies their outcomes.
type Service struct {
	db        db.DB
	queue     Inserter
	contacts  *contacts.Service
	announce  Announcer
	now       func() time.Time
	renderers map[string]Renderer
	// Schedule is the soft-bounce retry schedule (default: package Schedule).
	Schedule []time.Duration
}

func (s *Service) schedule() []time.Duration {
	if s.Schedule != nil {
		return s.Schedule
	}
	return Schedule
}

// NewService returns a Service.
func NewService(d db.DB, q Inserter, c *contacts.Service, a Announcer, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{db: d, queue: q, contacts: c, announce: a, now: now, renderers: map[string]Renderer{SourcePreview: previewRenderer{}}}
}

// Register sets the renderer of a source type. Call it before the queue
// starts working (the map is not guarded).
func (s *Service) Register(sourceType string, r Renderer) { s.renderers[sourceType] = r }

// Enqueue records a send and its job in tx. A suppressed recipient gets a
// send in status suppressed (reported as a hard bounce, as Loops does) and
// no job. It returns the send id.
func (s *Service) Enqueue(ctx context.Context, tx db.Tx, n New) (string, error) {
	payload, err := json.Marshal(n.Payload)
	if err != nil {
		return "", fmt.Errorf("enqueue: %w", err)
	}
	now := s.now().UnixMilli()
	id := ids.New()
	suppressed, err := s.contacts.IsSuppressed(ctx, tx, n.TeamID, strings.ToLower(n.Recipient))
	if err != nil {
		return "", err
	}
	status := StatusQueued
	if suppressed {
		status = StatusSuppressed
	}
	var contactID *string
	if n.ContactID != "" {
		contactID = &n.ContactID
	}
	if _, err := tx.Exec(ctx, `INSERT INTO sends (id, team_id, contact_id, recipient, source_type, source_id, source_name, payload, status, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
		id, n.TeamID, contactID, n.Recipient, n.SourceType, n.SourceID, n.SourceName, string(payload), status, now); err != nil {
		return "", fmt.Errorf("enqueue: %w", err)
	}
	if err := s.history(ctx, tx, id, status, ""); err != nil {
		return "", err
	}
	if suppressed {
		send := &Send{ID: id, TeamID: n.TeamID, ContactID: n.ContactID, Recipient: n.Recipient, SourceType: n.SourceType, SourceID: n.SourceID, SourceName: n.SourceName}
		return id, s.emit(ctx, tx, send, "email.hardBounced")
	}
	return id, s.queue.InsertTx(ctx, tx, SendArgs{SendID: id}, &queue.InsertOpts{Queue: Queue, MaxAttempts: len(s.schedule()) + 1})
}

func (s *Service) history(ctx context.Context, q db.Querier, sendID, status, detail string) error {
	if len(detail) > 1000 {
		detail = detail[:1000]
	}
	_, err := q.Exec(ctx, `INSERT INTO send_events (id, send_id, status, detail, created_at) VALUES ($1, $2, $3, $4, $5)`,
		ids.New(), sendID, status, detail, s.now().UnixMilli())
	return err
}

// Get returns a send; apperr.NotFound if absent.
func (s *Service) Get(ctx context.Context, q db.Querier, id string) (*Send, error) {
	var x Send
	var contactID *string
	var payload string
	var created int64
	err := q.QueryRow(ctx, `SELECT id, team_id, contact_id, recipient, source_type, source_id, source_name, email_message_id, subject, payload, status, attempts, message_id, created_at
		FROM sends WHERE id = $1`, id).Scan(&x.ID, &x.TeamID, &contactID, &x.Recipient, &x.SourceType, &x.SourceID, &x.SourceName,
		&x.EmailMessageID, &x.Subject, &payload, &x.Status, &x.Attempts, &x.MessageID, &created)
	if errors.Is(err, db.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "Send not found.")
	}
	if err != nil {
		return nil, err
	}
	if contactID != nil {
		x.ContactID = *contactID
	}
	x.Payload = json.RawMessage(payload)
	x.CreatedAt = time.UnixMilli(created).UTC()
	return &x, nil
}

// Event is one entry of a send's status history.
type Event struct {
	Status    string
	Detail    string
	CreatedAt time.Time
}

// History returns a send's status history, oldest first.
func (s *Service) History(ctx context.Context, sendID string) ([]Event, error) {
	rows, err := s.db.Query(ctx, `SELECT status, detail, created_at FROM send_events WHERE send_id = $1 ORDER BY created_at, id`, sendID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var at int64
		if err := rows.Scan(&e.Status, &e.Detail, &at); err != nil {
			return nil, err
		}
		e.CreatedAt = time.UnixMilli(at).UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}

// Recent lists a team's latest sends, newest first.
func (s *Service) Recent(ctx context.Context, teamID string, limit int) ([]Send, error) {
	rows, err := s.db.Query(ctx, `SELECT id FROM sends WHERE team_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, teamID, limit)
	if err != nil {
		return nil, err
	}
	var idsList []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		idsList = append(idsList, id)
	}
	rows.Close()
	out := make([]Send, 0, len(idsList))
	for _, id := range idsList {
		x, err := s.Get(ctx, s.db, id)
		if err != nil {
			return nil, err
		}
		out = append(out, *x)
	}
	return out, nil
}

// emit announces an email.* / *.email.sent webhook for a send.
func (s *Service) emit(ctx context.Context, tx db.Tx, x *Send, event string) error {
	if s.announce == nil || x.SourceType == SourcePreview {
		return nil // previews are not the customer's email events
	}
	return s.announce.Announce(ctx, tx, x.TeamID, event, func() (map[string]any, error) {
		m := map[string]any{
			"email":           map[string]any{"id": x.ID, "emailMessageId": x.EmailMessageID, "subject": x.Subject},
			"contactIdentity": s.identity(ctx, tx, x),
		}
		idKey := map[string]string{SourceCampaign: "campaignId", SourceLoop: "loopId", SourceTransactional: "transactionalId"}[x.SourceType]
		if idKey == "" {
			idKey = "transactionalId"
		}
		m[idKey] = x.SourceID
		switch event {
		case "transactional.email.sent":
			m["transactionalName"] = x.SourceName
		case "campaign.email.sent":
			m["campaignName"] = x.SourceName
			m["mailingLists"] = []any{}
		case "loop.email.sent":
			m["loopName"] = x.SourceName
			m["mailingLists"] = []any{}
		default:
			m["sourceType"] = x.SourceType
		}
		return m, nil
	})
}

func (s *Service) identity(ctx context.Context, q db.Querier, x *Send) map[string]any {
	ident := map[string]any{"id": x.ContactID, "email": x.Recipient, "userId": nil}
	if x.ContactID != "" {
		var userID *string
		if err := q.QueryRow(ctx, `SELECT user_id FROM contacts WHERE id = $1`, x.ContactID).Scan(&userID); err == nil {
			ident["userId"] = userID
		}
	}
	return ident
}

// Metrics are the all-time counters of the sends of one source, such as a
// transactional email. A send counts once per kind, whatever its later
// status: a delivered email that is then reported as spam is both a
// delivery and a spam report.
type Metrics struct {
	Sends       int64 // every send, including those refused as suppressed
	Deliveries  int64 // accepted by the next hop
	SpamReports int64 // complaints
	HardBounces int64 // hard bounces, and sends to an already suppressed address
	SoftBounces int64 // sends that soft-bounced at least once (retried or not)
}

// SourceMetrics counts the sends of a source from their status histories.
func (s *Service) SourceMetrics(ctx context.Context, teamID, sourceType, sourceID string) (Metrics, error) {
	var m Metrics
	had := func(statuses string) string {
		return `COALESCE(SUM(CASE WHEN EXISTS (SELECT 1 FROM send_events e WHERE e.send_id = s.id AND e.status IN (` + statuses + `)) THEN 1 ELSE 0 END), 0)`
	}
	err := s.db.QueryRow(ctx, `SELECT count(*),
		COALESCE(SUM(CASE WHEN s.sent_at IS NOT NULL THEN 1 ELSE 0 END), 0),
		`+had(`'complained'`)+`,
		`+had(`'hard_bounced', 'suppressed'`)+`,
		`+had(`'deferred', 'soft_bounced'`)+`
		FROM sends s WHERE s.team_id = $1 AND s.source_type = $2 AND s.source_id = $3`, teamID, sourceType, sourceID).
		Scan(&m.Sends, &m.Deliveries, &m.SpamReports, &m.HardBounces, &m.SoftBounces)
	if err != nil {
		return Metrics{}, fmt.Errorf("send metrics: %w", err)
	}
	return m, nil
}
