package audience

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
)

// IDExists reports whether a campaign (target "campaign"), workflow
// ("workflow") or workflow email message ("workflowEmail") with the id
// exists in the team.
type IDExists func(ctx context.Context, teamID, target, id string) (bool, error)

// Config configures a Service.
type Config struct {
	// IDExists checks activity condition ids beyond the send records (which
	// are always consulted). Nil means only send records count.
	IDExists IDExists
	Now      func() time.Time
}

// Service counts and lists audiences and stores segments.
type Service struct {
	db  db.DB
	cfg Config
}

// New returns a Service.
func New(d db.DB, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{db: d, cfg: cfg}
}

// SetIDExists sets the activity id check (see Config.IDExists). Call it
// during wiring, before the service is used.
func (s *Service) SetIDExists(fn IDExists) { s.cfg.IDExists = fn }

// Properties returns the team's custom property types (name → type).
func (s *Service) Properties(ctx context.Context, teamID string) (map[string]string, error) {
	return properties(ctx, s.db, teamID)
}

func properties(ctx context.Context, q db.Querier, teamID string) (map[string]string, error) {
	rows, err := q.Query(ctx, `SELECT name, type FROM contact_properties WHERE team_id = $1`, teamID)
	if err != nil {
		return nil, fmt.Errorf("load properties: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var n, t string
		if err := rows.Scan(&n, &t); err != nil {
			return nil, err
		}
		out[n] = t
	}
	return out, rows.Err()
}

// Prepare validates f against the team's properties (not its activity ids;
// see ValidateIDs) and returns its plan.
func (s *Service) Prepare(ctx context.Context, teamID string, f Filter) (*Plan, error) {
	props, err := s.Properties(ctx, teamID)
	if err != nil {
		return nil, err
	}
	return Prepare(f, props)
}

// Validate checks f for a team: Validate against its properties, then
// ValidateIDs.
func (s *Service) Validate(ctx context.Context, teamID string, f Filter) error {
	props, err := s.Properties(ctx, teamID)
	if err != nil {
		return err
	}
	if err := Validate(f, props); err != nil {
		return err
	}
	return s.ValidateIDs(ctx, teamID, f)
}

var targetNames = map[string]string{
	TargetCampaign:      "Campaign",
	TargetWorkflow:      "Workflow",
	TargetWorkflowEmail: "Workflow email",
}

// ValidateIDs checks that every activity condition names a campaign,
// workflow or workflow email that exists: one that has sends, a workflow (or
// the email message of one) that is not deleted, or one Config.IDExists
// knows. Otherwise apperr.NotFound ("Campaign not found.", …).
func (s *Service) ValidateIDs(ctx context.Context, teamID string, f Filter) error {
	seen := map[[2]string]bool{}
	for _, c := range f.Conditions {
		if c.Type != TypeActivity || seen[[2]string{c.Target, c.ID}] {
			continue
		}
		seen[[2]string{c.Target, c.ID}] = true
		ok, err := s.idExists(ctx, teamID, c.Target, c.ID)
		if err != nil {
			return err
		}
		if !ok {
			name := targetNames[c.Target]
			if name == "" {
				name = "Activity target"
			}
			return apperr.New(apperr.NotFound, "%s not found.", name)
		}
	}
	return nil
}

func (s *Service) idExists(ctx context.Context, teamID, target, id string) (bool, error) {
	if s.cfg.IDExists != nil {
		ok, err := s.cfg.IDExists(ctx, teamID, target, id)
		if err != nil || ok {
			return ok, err
		}
	}
	// A workflow or workflow email exists once created, whether or not it
	// has sent anything yet (§5.13: 404 only for ids that do not exist).
	var qs []string
	switch target {
	case TargetCampaign:
		qs = []string{`SELECT 1 FROM sends WHERE team_id = $1 AND source_type = 'campaign' AND source_id = $2 LIMIT 1`}
	case TargetWorkflow:
		qs = []string{`SELECT 1 FROM workflows WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL`,
			`SELECT 1 FROM sends WHERE team_id = $1 AND source_type = 'loop' AND source_id = $2 LIMIT 1`}
	case TargetWorkflowEmail:
		qs = []string{`SELECT 1 FROM email_messages m JOIN workflows w ON w.id = m.parent_id AND w.team_id = m.team_id
			WHERE m.team_id = $1 AND m.id = $2 AND m.parent_kind = 'workflow' AND w.deleted_at IS NULL`,
			`SELECT 1 FROM sends WHERE team_id = $1 AND email_message_id = $2 LIMIT 1`}
	}
	for _, q := range qs {
		var one int
		err := s.db.QueryRow(ctx, q, teamID, id).Scan(&one)
		if errors.Is(err, db.ErrNoRows) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("check %s id: %w", target, err)
		}
		return true, nil
	}
	return false, nil
}

// where renders the predicate of an audience over "contacts c" with the
// team id at $1 (the returned args start at $2).
func (s *Service) where(ctx context.Context, teamID string, a Audience) (string, []any, error) {
	props, err := s.Properties(ctx, teamID)
	if err != nil {
		return "", nil, err
	}
	conds := []string{"c.team_id = $1"}
	args := []any{teamID}
	if a.MailingListID != "" {
		args = append(args, a.MailingListID)
		conds = append(conds, fmt.Sprintf("EXISTS (SELECT 1 FROM contact_lists l WHERE l.contact_id = c.id AND l.list_id = $%d)", len(args)))
	}
	if a.SubscribedOnly {
		conds = append(conds, "c.subscribed")
	}
	for _, f := range a.Filters {
		p, err := Prepare(f, props)
		if err != nil {
			return "", nil, err
		}
		w, wargs := p.Where(s.db.Dialect(), 1, len(args)+1)
		conds = append(conds, w)
		args = append(args, wargs...)
	}
	return strings.Join(conds, " AND "), args, nil
}

// Count returns the number of the team's contacts matching f (see
// count.go for how it stays fast).
func (s *Service) Count(ctx context.Context, teamID string, f Filter) (int64, error) {
	p, err := s.Prepare(ctx, teamID, f)
	if err != nil {
		return 0, err
	}
	q, args := p.CountSQL(s.db.Dialect())
	var n int64
	if err := s.db.QueryRow(ctx, q, append([]any{teamID}, args...)...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count audience: %w", err)
	}
	return n, nil
}

// CountAudience returns the number of the team's contacts in a. It
// evaluates the predicate over every contact of the team (or of the list);
// Count is the fast path for a single filter.
func (s *Service) CountAudience(ctx context.Context, teamID string, a Audience) (int64, error) {
	w, args, err := s.where(ctx, teamID, a)
	if err != nil {
		return 0, err
	}
	var n int64
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM contacts c WHERE `+w, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count audience: %w", err)
	}
	return n, nil
}

// ContactIDs returns up to limit ids of the team's contacts matching f, in
// id order, after afterID ("" for the first page): keyset pages for
// sending a campaign.
func (s *Service) ContactIDs(ctx context.Context, teamID string, f Filter, afterID string, limit int) ([]string, error) {
	return s.AudienceIDs(ctx, teamID, Audience{Filters: []Filter{f}}, afterID, limit)
}

// AudienceIDs is ContactIDs for an Audience.
func (s *Service) AudienceIDs(ctx context.Context, teamID string, a Audience, afterID string, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("audience ids: limit must be positive")
	}
	w, args, err := s.where(ctx, teamID, a)
	if err != nil {
		return nil, err
	}
	args = append(args, afterID)
	q := fmt.Sprintf(`SELECT c.id FROM contacts c WHERE %s AND c.id > $%d ORDER BY c.id LIMIT %d`, w, len(args), limit)
	rows, err := s.db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("audience ids: %w", err)
	}
	defer rows.Close()
	out := make([]string, 0, limit)
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// Matches reports whether one contact matches f, evaluated in SQL. A
// contact that does not exist matches nothing.
func (s *Service) Matches(ctx context.Context, teamID, contactID string, f Filter) (bool, error) {
	w, args, err := s.where(ctx, teamID, Audience{Filters: []Filter{f}})
	if err != nil {
		return false, err
	}
	args = append(args, contactID)
	var n int64
	err = s.db.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM contacts c WHERE %s AND c.id = $%d`, w, len(args)), args...).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("match contact: %w", err)
	}
	return n > 0, nil
}

// Facts loads what Match needs to know about one contact: built-ins, lists,
// every custom property of the team, and the activity that the filters
// name (any other activity reads as "did not"). apperr.NotFound if there
// is no such contact.
func (s *Service) Facts(ctx context.Context, teamID, contactID string, filters ...Filter) (ContactFacts, error) {
	return loadFacts(ctx, s.db, teamID, contactID, filters)
}

// FactsIn is Facts through q (a transaction's own connection, so a caller
// holding one never waits for a second).
func (s *Service) FactsIn(ctx context.Context, q db.Querier, teamID, contactID string, filters ...Filter) (ContactFacts, error) {
	return loadFacts(ctx, q, teamID, contactID, filters)
}

func loadFacts(ctx context.Context, q db.Querier, teamID, contactID string, filters []Filter) (ContactFacts, error) {
	c := ContactFacts{ID: contactID}
	var sub bool
	err := q.QueryRow(ctx, `SELECT email, first_name, last_name, notes, source, user_group, user_id, subscribed, opt_in_status, created_at
		FROM contacts WHERE id = $1 AND team_id = $2`, contactID, teamID).
		Scan(&c.Email, &c.FirstName, &c.LastName, &c.Notes, &c.Source, &c.UserGroup, &c.UserID, &sub, &c.OptInStatus, &c.CreatedAt)
	if errors.Is(err, db.ErrNoRows) {
		return c, apperr.New(apperr.NotFound, "Contact not found.")
	}
	if err != nil {
		return c, fmt.Errorf("load contact: %w", err)
	}
	c.Subscribed = sub
	props, err := properties(ctx, q, teamID)
	if err != nil {
		return c, err
	}
	c.Custom = make(map[string]Value, len(props))
	for k, t := range props {
		c.Custom[k] = Value{Type: t}
	}
	rows, err := q.Query(ctx, `SELECT name, str, num FROM contact_values WHERE contact_id = $1`, contactID)
	if err != nil {
		return c, err
	}
	for rows.Next() {
		var name string
		var v Value
		if err := rows.Scan(&name, &v.Str, &v.Num); err != nil {
			rows.Close()
			return c, err
		}
		if t, ok := props[name]; ok {
			v.Type = t
			c.Custom[name] = v
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return c, err
	}
	c.MailingLists = map[string]bool{}
	rows, err = q.Query(ctx, `SELECT list_id FROM contact_lists WHERE contact_id = $1`, contactID)
	if err != nil {
		return c, err
	}
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			rows.Close()
			return c, err
		}
		c.MailingLists[l] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return c, err
	}

	did := map[[3]string]bool{}
	for _, f := range filters {
		for _, cond := range f.Conditions {
			if cond.Type != TypeActivity {
				continue
			}
			k := [3]string{cond.Action, cond.Target, cond.ID}
			if _, ok := did[k]; ok {
				continue
			}
			b := &sqlBuilder{dialect: db.SQLite, team: "$1", next: 3}
			a := atom{kind: kActivity, action: cond.Action, target: cond.Target, id: cond.ID}
			pred := b.activity(&a)
			var n int64
			if err := q.QueryRow(ctx, `SELECT count(*) FROM sends s WHERE s.team_id = $1 AND s.contact_id = $2 AND `+pred,
				append([]any{teamID, contactID}, b.args...)...).Scan(&n); err != nil {
				return c, fmt.Errorf("load activity: %w", err)
			}
			did[k] = n > 0
		}
	}
	c.Did = func(action, target, id string) bool { return did[[3]string{action, target, id}] }
	return c, nil
}

// MatchAudience reports whether the contact is in a, in memory.
func MatchAudience(a Audience, c ContactFacts) bool {
	if a.MailingListID != "" && !c.MailingLists[a.MailingListID] {
		return false
	}
	if a.SubscribedOnly && !c.Subscribed {
		return false
	}
	for _, f := range a.Filters {
		if !Match(f, c) {
			return false
		}
	}
	return true
}
