package content

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/guardian"
	"github.com/lasso-mail/lasso/internal/ids"
	"github.com/lasso-mail/lasso/internal/lmx"
)

// Parent kinds of an email message (§5.10).
const (
	ParentTransactional = "transactional"
	ParentCampaign      = "campaign"
	ParentWorkflow      = "workflow"
)

// Message states.
const (
	StateDraft     = "draft"     // editable
	StatePublished = "published" // live version of a transactional email
	StateArchived  = "archived"  // a former published version
	StateLocked    = "locked"    // a sent campaign's message
)

// Message is an email message (§6.8).
type Message struct {
	ID, TeamID, ParentKind, ParentID, State string

	Subject, PreviewText, FromName string
	// FromEmail is the local part; FromDomain the sending domain it is on.
	FromEmail, FromDomain, ReplyToEmail string
	CcEmail, BccEmail, LanguageCode     *string
	EmailFormat, LMX                    string
	// ThemeID is the theme the body uses (its <Style themeId>, else the
	// team's default theme).
	ThemeID string

	ContactFallbacks, EventFallbacks, DataFallbacks map[string]string

	ContentRevisionID    string
	CreatedAt, UpdatedAt time.Time

	snapshot *snapshot
}

// FromAddress is the full From address ("" when no local part is set).
func (m *Message) FromAddress() string {
	if m.FromEmail == "" || m.FromDomain == "" {
		return m.FromEmail
	}
	return m.FromEmail + "@" + m.FromDomain
}

const msgCols = `id, team_id, parent_kind, parent_id, state, subject, preview_text, from_name, from_email, from_domain, reply_to_email,
	cc_email, bcc_email, language_code, email_format, lmx, theme_id, contact_fallbacks, event_fallbacks, data_fallbacks, snapshot,
	content_revision_id, created_at, updated_at`

func scanMessage(r db.Row) (*Message, error) {
	m := &Message{}
	var theme, cf, ef, df, sn *string
	var c, u int64
	if err := r.Scan(&m.ID, &m.TeamID, &m.ParentKind, &m.ParentID, &m.State, &m.Subject, &m.PreviewText, &m.FromName, &m.FromEmail,
		&m.FromDomain, &m.ReplyToEmail, &m.CcEmail, &m.BccEmail, &m.LanguageCode, &m.EmailFormat, &m.LMX, &theme, &cf, &ef, &df, &sn,
		&m.ContentRevisionID, &c, &u); err != nil {
		return nil, err
	}
	if theme != nil {
		m.ThemeID = *theme
	}
	m.ContactFallbacks, m.EventFallbacks, m.DataFallbacks = parseJSONMap(cf), parseJSONMap(ef), parseJSONMap(df)
	if sn != nil && *sn != "" {
		var snap snapshot
		if err := json.Unmarshal([]byte(*sn), &snap); err != nil {
			return nil, fmt.Errorf("message %s snapshot: %w", m.ID, err)
		}
		m.snapshot = &snap
	}
	m.CreatedAt, m.UpdatedAt = fromMS(c), fromMS(u)
	return m, nil
}

var errMessageNotFound = apperr.New(apperr.NotFound, "Email message not found.")

func (s *Service) message(ctx context.Context, q db.Querier, teamID, id string) (*Message, error) {
	m, err := scanMessage(q.QueryRow(ctx, `SELECT `+msgCols+` FROM email_messages WHERE team_id = $1 AND id = $2`, teamID, id))
	if err == db.ErrNoRows {
		return nil, errMessageNotFound
	}
	return m, err
}

// Message returns an email message.
func (s *Service) Message(ctx context.Context, teamID, id string) (*Message, error) {
	if err := s.Begin(ctx, teamID); err != nil {
		return nil, err
	}
	if err := checkID(id, "email message"); err != nil {
		return nil, err
	}
	return s.message(ctx, s.db, teamID, id)
}

// CreateMessage creates an empty draft email message for a parent in tx
// (campaigns and workflows use it; transactional emails do internally).
// The caller must have called Begin for the team before opening tx.
func (s *Service) CreateMessage(ctx context.Context, tx db.Tx, teamID, parentKind, parentID string) (*Message, error) {
	return s.createMessage(ctx, tx, teamID, parentKind, parentID, nil)
}

// LockMessage makes a message read-only (a campaign once it is sent);
// updates then fail with 409 "Campaign is not in draft status.".
func (s *Service) LockMessage(ctx context.Context, q db.Querier, teamID, id string) error {
	_, err := q.Exec(ctx, `UPDATE email_messages SET state = $1 WHERE team_id = $2 AND id = $3 AND state = $4`, StateLocked, teamID, id, StateDraft)
	return err
}

// createMessage inserts a draft message, copying the content of seed when
// it is not nil.
func (s *Service) createMessage(ctx context.Context, tx db.Tx, teamID, parentKind, parentID string, seed *Message) (*Message, error) {
	now := s.now()
	m := &Message{ID: ids.New(), TeamID: teamID, ParentKind: parentKind, ParentID: parentID, State: StateDraft,
		EmailFormat: "styled", ContentRevisionID: ids.New(), CreatedAt: fromMS(ms(now)), UpdatedAt: fromMS(ms(now))}
	if seed != nil {
		m.Subject, m.PreviewText, m.FromName, m.FromEmail, m.FromDomain, m.ReplyToEmail = seed.Subject, seed.PreviewText, seed.FromName, seed.FromEmail, seed.FromDomain, seed.ReplyToEmail
		m.CcEmail, m.BccEmail, m.LanguageCode, m.EmailFormat, m.LMX, m.ThemeID = seed.CcEmail, seed.BccEmail, seed.LanguageCode, seed.EmailFormat, seed.LMX, seed.ThemeID
		m.ContactFallbacks, m.EventFallbacks, m.DataFallbacks = seed.ContactFallbacks, seed.EventFallbacks, seed.DataFallbacks
	} else {
		var err error
		if m.ThemeID, err = s.defaultTheme(ctx, tx, teamID); err != nil {
			return nil, err
		}
	}
	cf, err := nullableJSON(m.ContactFallbacks)
	if err != nil {
		return nil, err
	}
	ef, err := nullableJSON(m.EventFallbacks)
	if err != nil {
		return nil, err
	}
	df, err := nullableJSON(m.DataFallbacks)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO email_messages (id, team_id, parent_kind, parent_id, state, subject, preview_text, from_name,
		from_email, from_domain, reply_to_email, cc_email, bcc_email, language_code, email_format, lmx, theme_id, contact_fallbacks,
		event_fallbacks, data_fallbacks, content_revision_id, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $22)`,
		m.ID, teamID, parentKind, parentID, m.State, m.Subject, m.PreviewText, m.FromName, m.FromEmail, m.FromDomain, m.ReplyToEmail,
		m.CcEmail, m.BccEmail, m.LanguageCode, m.EmailFormat, m.LMX, m.ThemeID, cf, ef, df, m.ContentRevisionID, ms(now)); err != nil {
		return nil, err
	}
	if seed != nil {
		if _, err := tx.Exec(ctx, `INSERT INTO email_message_components (message_id, component_id, team_id, overridden)
			SELECT $1, component_id, team_id, overridden FROM email_message_components WHERE message_id = $2`, m.ID, seed.ID); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (s *Service) defaultTheme(ctx context.Context, q db.Querier, teamID string) (string, error) {
	var id string
	err := q.QueryRow(ctx, `SELECT id FROM themes WHERE team_id = $1 AND is_default`, teamID).Scan(&id)
	if err == db.ErrNoRows {
		return "", nil
	}
	return id, err
}

// MessageUpdate is the body of POST /v1/email-messages/{id}; nil fields are
// left unchanged. In the fallback maps a nil value deletes the key.
type MessageUpdate struct {
	ExpectedRevisionID *string

	Subject, PreviewText, FromName, FromEmail, ReplyToEmail *string
	CcEmail, BccEmail, LanguageCode, EmailFormat, LMX       *string

	ContactFallbacks, EventFallbacks, DataFallbacks map[string]*string
}

var (
	localPartRe = regexp.MustCompile("^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}$")
	variableRe  = regexp.MustCompile(`\{[A-Za-z]+\.[A-Za-z0-9_-]+\}`)
	langRe      = regexp.MustCompile(`^[a-z]{2}$`)
)

// hasVariable reports whether s contains a {namespace.name} variable.
func hasVariable(s string) bool { return variableRe.MatchString(s) }

// checkAddress accepts "", an address, or a value with variables (filled
// at send time).
func checkAddress(field, v string) error {
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" && v == "" {
			return nil
		}
		if hasVariable(part) {
			continue
		}
		a, err := mail.ParseAddress(part)
		if err != nil || a.Address != part {
			return apperr.New(apperr.Invalid, "%s must be a valid email address.", field)
		}
	}
	return nil
}

// fromAddress splits fromEmail into its local part and the team sending
// domain it is on.
func (s *Service) fromAddress(ctx context.Context, teamID, v string) (local, domain string, err error) {
	ds, err := s.cfg.Domains.Domains(ctx, teamID)
	if err != nil {
		return "", "", err
	}
	if len(ds) == 0 {
		return "", "", errNoDomain
	}
	local = strings.TrimSpace(v)
	if i := strings.LastIndexByte(local, '@'); i >= 0 {
		local, domain = local[:i], strings.ToLower(local[i+1:])
		found := false
		for _, d := range ds {
			if d.Domain == domain {
				found = true
			}
		}
		if !found {
			names := make([]string, len(ds))
			for i, d := range ds {
				names[i] = d.Domain
			}
			return "", "", apperr.New(apperr.Invalid, "fromEmail must be on your sending domain (%s); send the local part only.", strings.Join(names, ", "))
		}
	} else {
		domain = ds[0].Domain
		for _, d := range ds {
			if d.Verified {
				domain = d.Domain
				break
			}
		}
	}
	if local == "" {
		return "", "", nil
	}
	if !localPartRe.MatchString(variableRe.ReplaceAllString(local, "x")) {
		return "", "", apperr.New(apperr.Invalid, "fromEmail must be the local part of an address (before the @), e.g. \"hello\".")
	}
	return local, domain, nil
}

func mergeFallbacks(cur map[string]string, in map[string]*string) map[string]string {
	if in == nil {
		return cur
	}
	out := make(map[string]string, len(cur)+len(in))
	for k, v := range cur {
		out[k] = v
	}
	for k, v := range in {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = *v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func optional(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

func notDraft(m *Message) error {
	if m.ParentKind == ParentTransactional {
		return apperr.New(apperr.Conflict, "This email message is published and cannot be edited. Create a draft with POST /v1/transactional-emails/%s/draft.", m.ParentID)
	}
	return apperr.New(apperr.Conflict, "Campaign is not in draft status.")
}

// UpdateMessage applies u to a draft email message and returns it with a
// new content revision and the LMX warnings.
func (s *Service) UpdateMessage(ctx context.Context, teamID, id string, u MessageUpdate) (*Message, []Warning, error) {
	if err := s.Begin(ctx, teamID); err != nil {
		return nil, nil, err
	}
	if err := checkID(id, "email message"); err != nil {
		return nil, nil, err
	}
	var prep *prepared
	if u.LMX != nil {
		if err := checkLMXSize(*u.LMX); err != nil {
			return nil, nil, err
		}
		lib, err := s.loadLibrary(ctx, s.db, teamID)
		if err != nil {
			return nil, nil, err
		}
		if prep, err = lib.prepare(*u.LMX); err != nil {
			return nil, nil, err
		}
	}
	var fromLocal, fromDomain string
	if u.FromEmail != nil {
		var err error
		if fromLocal, fromDomain, err = s.fromAddress(ctx, teamID, *u.FromEmail); err != nil {
			return nil, nil, err
		}
	}
	if u.ReplyToEmail != nil {
		if err := checkAddress("replyToEmail", *u.ReplyToEmail); err != nil {
			return nil, nil, err
		}
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"ccEmail", u.CcEmail}, {"bccEmail", u.BccEmail}} {
		if f.v != nil {
			if err := checkAddress(f.name, *f.v); err != nil {
				return nil, nil, err
			}
		}
	}
	if u.LanguageCode != nil && *u.LanguageCode != "" && !langRe.MatchString(*u.LanguageCode) {
		return nil, nil, apperr.New(apperr.Invalid, "languageCode must be an ISO 639-1 code such as \"en\".")
	}
	if u.EmailFormat != nil && *u.EmailFormat != "styled" && *u.EmailFormat != "plain" {
		return nil, nil, apperr.New(apperr.Invalid, "emailFormat must be \"styled\" or \"plain\".")
	}

	var out *Message
	err := s.db.InTx(ctx, func(tx db.Tx) error {
		m, err := s.message(ctx, tx, teamID, id)
		if err != nil {
			return err
		}
		if m.State != StateDraft {
			return notDraft(m)
		}
		if u.ExpectedRevisionID != nil && *u.ExpectedRevisionID != m.ContentRevisionID {
			return apperr.New(apperr.Conflict, "Content revision ID is stale.")
		}
		if (u.CcEmail != nil || u.BccEmail != nil) && m.ParentKind == ParentCampaign {
			return apperr.New(apperr.Invalid, "ccEmail and bccEmail are not supported for campaign emails.")
		}
		set := func(dst *string, v *string) {
			if v != nil {
				*dst = *v
			}
		}
		set(&m.Subject, u.Subject)
		set(&m.PreviewText, u.PreviewText)
		set(&m.FromName, u.FromName)
		set(&m.ReplyToEmail, u.ReplyToEmail)
		set(&m.EmailFormat, u.EmailFormat)
		if u.FromEmail != nil {
			m.FromEmail, m.FromDomain = fromLocal, fromDomain
		}
		if u.CcEmail != nil {
			m.CcEmail = optional(*u.CcEmail)
		}
		if u.BccEmail != nil {
			m.BccEmail = optional(*u.BccEmail)
		}
		if u.LanguageCode != nil {
			m.LanguageCode = optional(*u.LanguageCode)
		}
		if prep != nil {
			m.LMX, m.ThemeID = *u.LMX, prep.themeID
		}
		m.ContactFallbacks = mergeFallbacks(m.ContactFallbacks, u.ContactFallbacks)
		m.EventFallbacks = mergeFallbacks(m.EventFallbacks, u.EventFallbacks)
		m.DataFallbacks = mergeFallbacks(m.DataFallbacks, u.DataFallbacks)
		old := m.ContentRevisionID
		m.ContentRevisionID = ids.New()
		now := s.now()
		m.UpdatedAt = fromMS(ms(now))
		cf, _ := nullableJSON(m.ContactFallbacks)
		ef, _ := nullableJSON(m.EventFallbacks)
		df, _ := nullableJSON(m.DataFallbacks)
		n, err := tx.Exec(ctx, `UPDATE email_messages SET subject = $1, preview_text = $2, from_name = $3, from_email = $4, from_domain = $5,
			reply_to_email = $6, cc_email = $7, bcc_email = $8, language_code = $9, email_format = $10, lmx = $11, theme_id = $12,
			contact_fallbacks = $13, event_fallbacks = $14, data_fallbacks = $15, content_revision_id = $16, updated_at = $17
			WHERE id = $18 AND content_revision_id = $19 AND state = $20`,
			m.Subject, m.PreviewText, m.FromName, m.FromEmail, m.FromDomain, m.ReplyToEmail, m.CcEmail, m.BccEmail, m.LanguageCode,
			m.EmailFormat, m.LMX, m.ThemeID, cf, ef, df, m.ContentRevisionID, ms(now), m.ID, old, StateDraft)
		if err != nil {
			return err
		}
		if n == 0 {
			return apperr.New(apperr.Conflict, "Content revision ID is stale.")
		}
		if prep != nil {
			if err := setRefs(ctx, tx, teamID, m.ID, prep.refs); err != nil {
				return err
			}
		}
		out = m
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	var ws []Warning
	if prep != nil {
		ws = prep.warnings
	}
	return out, ws, nil
}

func setRefs(ctx context.Context, tx db.Tx, teamID, messageID string, refs []componentRef) error {
	if _, err := tx.Exec(ctx, `DELETE FROM email_message_components WHERE message_id = $1`, messageID); err != nil {
		return err
	}
	for _, r := range refs {
		if _, err := tx.Exec(ctx, `INSERT INTO email_message_components (message_id, component_id, team_id, overridden) VALUES ($1, $2, $3, $4)`,
			messageID, r.id, teamID, r.overridden); err != nil {
			return err
		}
	}
	return nil
}

func guardianKind(parentKind string) guardian.Kind {
	switch parentKind {
	case ParentCampaign:
		return guardian.Campaign
	case ParentWorkflow:
		return guardian.Workflow
	}
	return guardian.Transactional
}

func (s *Service) contactProperties(ctx context.Context, teamID string) ([]string, error) {
	if s.cfg.ContactProperties == nil {
		return []string{}, nil
	}
	ps, err := s.cfg.ContactProperties(ctx, teamID)
	if ps == nil {
		ps = []string{}
	}
	return ps, err
}

// parsed parses a stored message and expands its components from its
// snapshot (published) or the team's library.
func (s *Service) parsed(m *Message, lib *library) (*lmx.Doc, error) {
	doc, _, err := lmx.Parse(m.LMX)
	if err != nil {
		return nil, apperr.New(apperr.Conflict, "Email message content cannot be parsed: %s", err.Error())
	}
	comps := lib.components
	if m.snapshot != nil {
		comps = m.snapshot.Components
	}
	if err := lmx.Expand(doc, comps); err != nil {
		return nil, lmxError(err)
	}
	return doc, nil
}

func guardianInput(m *Message, doc *lmx.Doc, props []string) guardian.Input {
	in := guardian.Input{Kind: guardianKind(m.ParentKind), Doc: doc, Subject: m.Subject, PreviewText: m.PreviewText,
		FromName: m.FromName, FromEmail: m.FromEmail, ReplyToEmail: m.ReplyToEmail,
		ContactPropertiesFallbacks: m.ContactFallbacks, EventPropertiesFallbacks: m.EventFallbacks, DataVariablesFallbacks: m.DataFallbacks,
		ContactProperties: props}
	if m.CcEmail != nil {
		in.CcEmail = *m.CcEmail
	}
	if m.BccEmail != nil {
		in.BccEmail = *m.BccEmail
	}
	return in
}

// Guardian runs the Guardian checks (§12) on an email message.
func (s *Service) Guardian(ctx context.Context, teamID, id string) (guardian.Result, error) {
	m, err := s.Message(ctx, teamID, id)
	if err != nil {
		return guardian.Result{}, err
	}
	lib, err := s.loadLibrary(ctx, s.db, teamID)
	if err != nil {
		return guardian.Result{}, err
	}
	doc, err := s.parsed(m, lib)
	if err != nil {
		if errors.Is(err, apperr.Unprocessable) {
			msg, _ := apperr.Message(err)
			return guardian.Result{}, apperr.New(apperr.Conflict, "%s", msg)
		}
		return guardian.Result{}, err
	}
	props, err := s.contactProperties(ctx, teamID)
	if err != nil {
		return guardian.Result{}, err
	}
	return guardian.Check(guardianInput(m, doc, props)), nil
}

// variables returns the names of namespace ns used by m's body (expanded
// doc) and settings fields, sorted and unique.
func variables(m *Message, doc *lmx.Doc, ns string) []string {
	set := map[string]bool{}
	if doc != nil {
		for _, v := range doc.Variables() {
			if v.Namespace == ns {
				set[v.Name] = true
			}
		}
	}
	fields := []string{m.Subject, m.PreviewText, m.FromName, m.FromEmail, m.ReplyToEmail}
	if m.CcEmail != nil {
		fields = append(fields, *m.CcEmail)
	}
	if m.BccEmail != nil {
		fields = append(fields, *m.BccEmail)
	}
	for _, f := range fields {
		for _, v := range lmx.VariablesIn(f) {
			if v.Namespace == ns {
				set[v.Name] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
