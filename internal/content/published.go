package content

import (
	"context"
	"net/mail"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/lmx"
)

// Published is what sending a transactional email needs.
type Published struct {
	TransactionalID, Name, EmailMessageID              string
	Subject, PreviewText, FromName, FromEmail, ReplyTo string
	Template                                           *lmx.Template // compiled with its theme and components
	DataVariables                                      []string      // names of {data.x} used (required unless they have a fallback)
	Fallbacks                                          lmx.Fallbacks
}

// maxCompiled bounds the compiled-template cache.
const maxCompiled = 1024

// PublishedTransactional returns apperr.NotFound for an unknown id and
// apperr.Invalid ("… is not published") when it has no published version.
// FromEmail is the full address (local part @ its sending domain), "" when
// unset. Compiled templates are cached per published message id (a
// published message never changes).
func (s *Service) PublishedTransactional(ctx context.Context, teamID, id string) (*Published, error) {
	t, err := s.transactional(ctx, s.db, teamID, id)
	if err != nil {
		return nil, err
	}
	if t.PublishedMessageID == "" {
		return nil, apperr.New(apperr.Invalid, "Transactional email %s is not published.", id)
	}
	s.mu.Lock()
	p := s.compiled[t.PublishedMessageID]
	s.mu.Unlock()
	if p != nil {
		if p.Name == t.Name {
			return p, nil
		}
		cp := *p
		cp.Name = t.Name
		return &cp, nil
	}
	m, err := s.message(ctx, s.db, teamID, t.PublishedMessageID)
	if err != nil {
		return nil, err
	}
	tmpl, err := s.compile(ctx, s.db, m)
	if err != nil {
		return nil, err
	}
	p = &Published{TransactionalID: t.ID, Name: t.Name, EmailMessageID: m.ID,
		Subject: m.Subject, PreviewText: m.PreviewText, FromName: m.FromName, FromEmail: m.FromAddress(), ReplyTo: m.ReplyToEmail,
		Template: tmpl, DataVariables: t.DataVariables,
		Fallbacks: lmx.Fallbacks{Contact: m.ContactFallbacks, Event: m.EventFallbacks, Data: m.DataFallbacks}}
	s.mu.Lock()
	if len(s.compiled) >= maxCompiled {
		clear(s.compiled)
	}
	s.compiled[m.ID] = p
	s.mu.Unlock()
	return p, nil
}

// compile compiles m with its snapshot (published) or the team's current
// theme and components (drafts).
func (s *Service) compile(ctx context.Context, q db.Querier, m *Message) (*lmx.Template, error) {
	doc, _, err := lmx.Parse(m.LMX)
	if err != nil {
		return nil, lmxError(err)
	}
	opts := lmx.Options{Subject: m.Subject, PreviewText: m.PreviewText}
	if m.LanguageCode != nil {
		opts.Lang = *m.LanguageCode
	}
	if m.snapshot != nil {
		th := m.snapshot.Theme
		opts.Theme, opts.Components = &th, lmx.ComponentMap(m.snapshot.Components)
	} else {
		lib, err := s.loadLibrary(ctx, q, m.TeamID)
		if err != nil {
			return nil, err
		}
		th := lib.theme(m.ThemeID)
		opts.Theme, opts.Components = &th, lib.components
	}
	tmpl, err := lmx.Compile(doc, opts)
	if err != nil {
		return nil, lmxError(err)
	}
	return tmpl, nil
}

// PreviewInput is the body of POST /v1/email-messages/{id}/preview.
type PreviewInput struct {
	Emails []string
	// Values by namespace; which ones a message may use depends on its
	// parent (campaign: contact; workflow: contact and event;
	// transactional: data). nil means not given.
	ContactProperties, EventProperties, DataVariables map[string]string
}

// Preview renders an email message with the given values and sends it to
// the listed addresses. Previews count against a per-team quota of
// PreviewLimit emails per rolling 24 hours (429 beyond).
func (s *Service) Preview(ctx context.Context, teamID, id string, in PreviewInput) error {
	m, err := s.Message(ctx, teamID, id)
	if err != nil {
		return err
	}
	if len(in.Emails) == 0 {
		return apperr.New(apperr.Invalid, "emails must list at least one address.")
	}
	for i, e := range in.Emails {
		a, err := mail.ParseAddress(strings.TrimSpace(e))
		if err != nil {
			return apperr.New(apperr.Invalid, "emails[%d] is not a valid email address.", i)
		}
		in.Emails[i] = a.Address
	}
	allowed := map[string]bool{"contactProperties": m.ParentKind != ParentTransactional, "eventProperties": m.ParentKind == ParentWorkflow,
		"dataVariables": m.ParentKind == ParentTransactional}
	for name, given := range map[string]bool{"contactProperties": in.ContactProperties != nil, "eventProperties": in.EventProperties != nil,
		"dataVariables": in.DataVariables != nil} {
		if given && !allowed[name] {
			return apperr.New(apperr.Invalid, "%s cannot be used in a %s email.", name, m.ParentKind)
		}
	}
	s.mu.Lock()
	sender := s.preview
	s.mu.Unlock()
	if sender == nil {
		return apperr.New(apperr.NotImplemented, "Sending previews is not available on this server.")
	}
	tmpl, err := s.compile(ctx, s.db, m)
	if err != nil {
		return err
	}
	err = s.db.InTx(ctx, func(tx db.Tx) error {
		ok, err := s.quota(ctx, tx, teamID, "preview", len(in.Emails), s.cfg.PreviewLimit, 24*time.Hour, nil)
		if err != nil {
			return err
		}
		if !ok {
			return apperr.New(apperr.RateLimited, "Preview limit exceeded: max %d preview emails per 24 hours.", s.cfg.PreviewLimit).
				With("maxPreviews", s.cfg.PreviewLimit).With("windowHours", 24)
		}
		return nil
	})
	if err != nil {
		return err
	}
	vals := &lmx.Values{Contact: in.ContactProperties, Event: in.EventProperties, Data: in.DataVariables}
	fb := &lmx.Fallbacks{Contact: m.ContactFallbacks, Event: m.EventFallbacks, Data: m.DataFallbacks}
	html, text := tmpl.Render(vals, fb)
	subject := lmx.Interpolate(m.Subject, vals, fb)
	from := m.FromAddress()
	if m.FromEmail != "" {
		from = lmx.Interpolate(from, vals, fb)
	}
	return sender.SendPreview(ctx, teamID, in.Emails, subject, html, text, lmx.Interpolate(m.FromName, vals, fb), from,
		lmx.Interpolate(m.ReplyToEmail, vals, fb))
}

// PreviewLimit is the preview quota (emails per team per rolling 24 h).
func (s *Service) PreviewLimit() int { return s.cfg.PreviewLimit }
