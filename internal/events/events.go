// Package events records the events a team sends (POST /events/send): it
// upserts the contact, stores the event, records the event's pattern (name
// and property names with types) and announces the event with a job, all in
// one transaction. Workflows react to the job; this package does not know them.
package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
	"github.com/lasso-mail/lasso/internal/queue"
)

// Recorded identifies one stored event.
type Recorded struct {
	EventID   string `json:"event_id"`
	TeamID    string `json:"team_id"`
	ContactID string `json:"contact_id"`
	Name      string `json:"name"`
}

// RecordedArgs announces stored events. Kind "events_recorded". Events
// committed together (one group commit on SQLite) share one job, so the
// queue's cost is paid per commit rather than per event; a worker must
// handle every event of the job and be idempotent (jobs run at least once).
type RecordedArgs struct {
	Events []Recorded `json:"events"`
}

// Kind implements queue.Args.
func (RecordedArgs) Kind() string { return "events_recorded" }

// Inserter is the part of the queue events needs.
type Inserter interface {
	InsertTx(ctx context.Context, tx db.Tx, args queue.Args, opts *queue.InsertOpts) error
}

// Send is the input of Service.Send.
type Send struct {
	Name           string
	Contact        contacts.Upsert
	Properties     map[string]any // event properties, decoded with UseNumber
	IdempotencyKey string
}

// Service records events.
type Service struct {
	db       db.DB
	contacts *contacts.Service
	queue    Inserter
	now      func() time.Time

	mu    sync.Mutex
	known map[string]bool // "team\x00event\x00prop" patterns already recorded
}

// New returns a Service.
func New(d db.DB, c *contacts.Service, q Inserter, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{db: d, contacts: c, queue: q, now: now, known: map[string]bool{}}
}

// IdempotencyWindow is how long an Idempotency-Key cannot be reused.
const IdempotencyWindow = 24 * time.Hour

// ClaimIdempotencyKey records key for scope in tx, or returns apperr.Conflict
// if it was used within IdempotencyWindow. Concurrent duplicates serialise
// on the key's primary key, so exactly one of them claims it.
func ClaimIdempotencyKey(ctx context.Context, tx db.Tx, now time.Time, teamID, scope, key string) error {
	if key == "" {
		return nil
	}
	if len(key) > 100 {
		return apperr.New(apperr.Invalid, "Idempotency-Key must be at most 100 characters.")
	}
	var one int
	err := tx.QueryRow(ctx, `INSERT INTO idempotency_keys (team_id, scope, key, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (team_id, scope, key) DO UPDATE SET created_at = excluded.created_at
		WHERE idempotency_keys.created_at < $5
		RETURNING 1`, teamID, scope, key, now.UnixMilli(), now.Add(-IdempotencyWindow).UnixMilli()).Scan(&one)
	if errors.Is(err, db.ErrNoRows) || db.IsUnique(err) {
		return apperr.New(apperr.Conflict, "Idempotency key already used within the last 24 hours.")
	}
	if err != nil {
		return fmt.Errorf("claim idempotency key: %w", err)
	}
	return nil
}

// Send records an event for the contact, creating or updating the contact.
func (s *Service) Send(ctx context.Context, teamID string, in Send) (string, error) {
	in.Name = strings.TrimSpace(in.Name)
	if in.Name == "" {
		return "", apperr.New(apperr.Invalid, "eventName is required.")
	}
	if len(in.Name) > 200 {
		return "", apperr.New(apperr.Invalid, "eventName is too long.")
	}
	props, types, err := normalizeProps(in.Properties)
	if err != nil {
		return "", err
	}
	propsJSON, err := json.Marshal(props)
	if err != nil {
		return "", apperr.New(apperr.Invalid, "Invalid eventProperties.")
	}
	var eventID string
	var newPatterns []string
	err = contacts.RetryUnique(func() error {
		return s.db.InTx(ctx, func(tx db.Tx) error {
			now := s.now()
			if err := ClaimIdempotencyKey(ctx, tx, now, teamID, "events", in.IdempotencyKey); err != nil {
				return err
			}
			res, err := s.contacts.UpsertTx(ctx, tx, teamID, in.Contact)
			if err != nil {
				return err
			}
			eventID = ids.New()
			if _, err := tx.Exec(ctx, `INSERT INTO events (id, team_id, contact_id, name, properties, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
				eventID, teamID, res.ID, in.Name, string(propsJSON), now.UnixMilli()); err != nil {
				return fmt.Errorf("insert event: %w", err)
			}
			if newPatterns, err = s.recordPattern(ctx, tx, teamID, in.Name, types, now); err != nil {
				return err
			}
			return tx.Collect("events_recorded", Recorded{EventID: eventID, TeamID: teamID, ContactID: res.ID, Name: in.Name}, s.flushRecorded)
		})
	})
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	for _, k := range newPatterns {
		s.known[k] = true
	}
	s.mu.Unlock()
	return eventID, nil
}

// flushRecorded inserts one job for the events of a commit.
func (s *Service) flushRecorded(ctx context.Context, tx db.Tx, items []any) error {
	args := RecordedArgs{Events: make([]Recorded, len(items))}
	for i, it := range items {
		args.Events[i] = it.(Recorded)
	}
	return s.queue.InsertTx(ctx, tx, args, nil)
}

// normalizeProps checks event properties: flat values of string, number or
// boolean (dates arrive as strings). It returns the values and their types.
func normalizeProps(in map[string]any) (map[string]any, map[string]string, error) {
	out := make(map[string]any, len(in))
	types := make(map[string]string, len(in))
	for k, v := range in {
		name := strings.TrimSpace(k)
		if name == "" {
			return nil, nil, apperr.New(apperr.Invalid, "Event property names cannot be empty.")
		}
		switch x := v.(type) {
		case nil:
			continue
		case string:
			types[name] = contacts.TypeString
			if _, ok := contacts.ParseDate(x); ok && len(x) >= 10 && strings.Contains(x, "-") {
				types[name] = contacts.TypeDate
			}
		case json.Number:
			types[name] = contacts.TypeNumber
		case bool:
			types[name] = contacts.TypeBoolean
		default:
			return nil, nil, apperr.New(apperr.Invalid, "Event property %s must be a string, number or boolean.", name)
		}
		out[name] = v
	}
	return out, types, nil
}

// recordPattern records the event name and property names the first time
// they are seen. Already-known ones are skipped without touching the
// database (a per-node cache; the writes are idempotent anyway).
func (s *Service) recordPattern(ctx context.Context, tx db.Tx, teamID, name string, types map[string]string, now time.Time) ([]string, error) {
	key := teamID + "\x00" + name
	var missing []string
	s.mu.Lock()
	if !s.known[key] {
		missing = append(missing, key)
	}
	names := make([]string, 0, len(types))
	for p := range types {
		if !s.known[key+"\x00"+p] {
			names = append(names, p)
		}
	}
	s.mu.Unlock()
	if len(missing) == 0 && len(names) == 0 {
		return nil, nil
	}
	sort.Strings(names)
	if _, err := tx.Exec(ctx, `INSERT INTO event_patterns (id, team_id, name, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) ON CONFLICT (team_id, name) DO NOTHING`,
		ids.New(), teamID, name, now.UnixMilli()); err != nil {
		return nil, fmt.Errorf("record event pattern: %w", err)
	}
	var patternID string
	if err := tx.QueryRow(ctx, `SELECT id FROM event_patterns WHERE team_id = $1 AND name = $2`, teamID, name).Scan(&patternID); err != nil {
		return nil, fmt.Errorf("record event pattern: %w", err)
	}
	for _, p := range names {
		n, err := tx.Exec(ctx, `INSERT INTO event_pattern_properties (pattern_id, name, type, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (pattern_id, name) DO NOTHING`,
			patternID, p, types[p], now.UnixMilli())
		if err != nil {
			return nil, fmt.Errorf("record event property: %w", err)
		}
		if n > 0 {
			if _, err := tx.Exec(ctx, `UPDATE event_patterns SET updated_at = $2 WHERE id = $1`, patternID, now.UnixMilli()); err != nil {
				return nil, err
			}
		}
		missing = append(missing, key+"\x00"+p)
	}
	return missing, nil
}

// Event is a stored event.
type Event struct {
	ID         string
	TeamID     string
	ContactID  string
	Name       string
	Properties map[string]any
	CreatedAt  time.Time
}

// Get returns a stored event; apperr.NotFound if absent.
func (s *Service) Get(ctx context.Context, q db.Querier, id string) (Event, error) {
	var e Event
	var props string
	var created int64
	err := q.QueryRow(ctx, `SELECT id, team_id, contact_id, name, properties, created_at FROM events WHERE id = $1`, id).
		Scan(&e.ID, &e.TeamID, &e.ContactID, &e.Name, &props, &created)
	if errors.Is(err, db.ErrNoRows) {
		return Event{}, apperr.New(apperr.NotFound, "Event not found.")
	}
	if err != nil {
		return Event{}, err
	}
	e.CreatedAt = time.UnixMilli(created).UTC()
	dec := json.NewDecoder(strings.NewReader(props))
	dec.UseNumber()
	err = dec.Decode(&e.Properties)
	return e, err
}

// Count returns the number of events of a team with the name ("" for all).
func (s *Service) Count(ctx context.Context, teamID, name string) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM events WHERE team_id = $1 AND ($2 = '' OR name = $2)`, teamID, name).Scan(&n)
	return n, err
}

// PruneIdempotencyKeys deletes keys older than IdempotencyWindow: they can
// no longer refuse a request (ClaimIdempotencyKey overwrites them).
func (s *Service) PruneIdempotencyKeys(ctx context.Context) (int64, error) {
	return db.Prune(ctx, s.db, "idempotency_keys", "team_id, scope, key", "created_at < $1", "created_at",
		s.now().Add(-IdempotencyWindow).UnixMilli())
}
