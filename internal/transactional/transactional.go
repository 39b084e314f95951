// Package transactional sends transactional email from published templates
// (POST /transactional and SMTP submission): it validates the request and
// its data variables, optionally adds the recipient to the audience, and
// records the send with its job in one transaction; the request returns once
// the email is durably queued. It also renders those sends for the send job.
package transactional

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/content"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/delivery"
	"github.com/lasso-mail/lasso/internal/emails"
	"github.com/lasso-mail/lasso/internal/events"
	"github.com/lasso-mail/lasso/internal/lmx"
)

// Templates is the part of the content service a send needs.
type Templates interface {
	PublishedTransactional(ctx context.Context, teamID, id string) (*content.Published, error)
}

// Domains tells whether a sending domain is verified.
type Domains interface {
	IsVerified(ctx context.Context, teamID, domain string) (bool, error)
}

// Attachment is a file sent with the email (data is base64).
type Attachment struct {
	Filename    string `json:"filename"`
	ContentType string `json:"contentType"`
	Data        string `json:"data"`
}

// Request is one transactional send.
type Request struct {
	TransactionalID string
	Email           string
	AddToAudience   bool
	DataVariables   map[string]any
	Attachments     []Attachment
	IdempotencyKey  string
}

// payload is what the send job needs to render the email.
type payload struct {
	DataVariables map[string]string `json:"dataVariables"`
	Attachments   []Attachment      `json:"attachments,omitempty"`
}

// MaxAttachmentBytes bounds the decoded attachments of one email.
const MaxAttachmentBytes = 4 << 20

// Service sends transactional email.
type Service struct {
	db        db.DB
	templates Templates
	contacts  *contacts.Service
	emails    *emails.Service
	domains   Domains
	now       func() time.Time
}

// New returns a Service and registers its renderer with the emails service.
func New(d db.DB, t Templates, c *contacts.Service, e *emails.Service, dom Domains, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	s := &Service{db: d, templates: t, contacts: c, emails: e, domains: dom, now: now}
	e.Register(emails.SourceTransactional, s)
	return s
}

// Send validates req and queues the email. It returns the send id.
func (s *Service) Send(ctx context.Context, teamID string, req Request) (string, error) {
	if strings.TrimSpace(req.TransactionalID) == "" {
		return "", apperr.New(apperr.Invalid, "transactionalId is required.").With("path", "transactionalId")
	}
	email, err := contacts.NormalizeEmail(req.Email)
	if err != nil {
		return "", apperr.New(apperr.Invalid, "Invalid email address.").With("path", "email")
	}
	pub, err := s.templates.PublishedTransactional(ctx, teamID, req.TransactionalID)
	if errors.Is(err, apperr.NotFound) {
		// The contract's 404 body carries the nested error object.
		msg := "Transactional email not found."
		return "", apperr.New(apperr.NotFound, "%s", msg).With("error", map[string]any{"path": "transactionalId", "message": msg})
	}
	if err != nil {
		return "", err
	}
	// Mail leaves only from a verified sending domain.
	if at := strings.LastIndexByte(pub.FromEmail, '@'); at < 0 {
		return "", apperr.New(apperr.Invalid, "This transactional email has no from address.")
	} else if ok, err := s.domains.IsVerified(ctx, teamID, pub.FromEmail[at+1:]); err != nil {
		return "", err
	} else if !ok {
		return "", apperr.New(apperr.Invalid, "The sending domain %s is not verified.", pub.FromEmail[at+1:])
	}
	vars, err := dataVariables(req.DataVariables)
	if err != nil {
		return "", err
	}
	var missing []string
	for _, name := range pub.DataVariables {
		if v, ok := vars[name]; ok && v != "" {
			continue
		}
		if _, ok := pub.Fallbacks.Data[name]; ok {
			continue
		}
		missing = append(missing, name)
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		msg := "Missing required data variable(s): " + strings.Join(missing, ", ")
		if len(req.DataVariables) == 0 {
			msg = "There are required fields for this email. You need to include a 'dataVariables' object with the required fields."
		}
		return "", apperr.New(apperr.Invalid, "%s", msg).
			With("error", map[string]any{"path": "dataVariables", "message": msg}).
			With("transactionalId", req.TransactionalID)
	}
	total := 0
	for i, a := range req.Attachments {
		if strings.TrimSpace(a.Filename) == "" || strings.ContainsAny(a.Filename, "\r\n") {
			return "", apperr.New(apperr.Invalid, "attachments[%d].filename is required.", i).With("path", "attachments")
		}
		b, err := base64.StdEncoding.DecodeString(a.Data)
		if err != nil {
			return "", apperr.New(apperr.Invalid, "attachments[%d].data must be base64.", i).With("path", "attachments")
		}
		total += len(b)
	}
	if total > MaxAttachmentBytes {
		return "", apperr.New(apperr.TooLarge, "Attachments exceed 4 MB.")
	}
	var sendID string
	err = contacts.RetryUnique(func() error {
		return s.db.InTx(ctx, func(tx db.Tx) error {
			if err := events.ClaimIdempotencyKey(ctx, tx, s.now(), teamID, "transactional", req.IdempotencyKey); err != nil {
				return err
			}
			contactID := ""
			if req.AddToAudience {
				r, err := s.contacts.UpsertTx(ctx, tx, teamID, contacts.Upsert{Email: email})
				if err != nil {
					return err
				}
				contactID = r.ID
			} else if c, err := s.contacts.FindTx(ctx, tx, teamID, email); err != nil {
				return err
			} else {
				contactID = c
			}
			sendID, err = s.emails.Enqueue(ctx, tx, emails.New{
				TeamID: teamID, ContactID: contactID, Recipient: email,
				SourceType: emails.SourceTransactional, SourceID: pub.TransactionalID, SourceName: pub.Name,
				Payload: payload{DataVariables: vars, Attachments: req.Attachments},
			})
			return err
		})
	})
	return sendID, err
}

// dataVariables accepts strings and numbers (and, for array blocks, arrays
// of flat objects, kept as JSON text since LMX has no array block yet).
func dataVariables(in map[string]any) (map[string]string, error) {
	out := make(map[string]string, len(in))
	for k, v := range in {
		if !lmx.ValidName(k) {
			return nil, apperr.New(apperr.Invalid, "Invalid data variable name %q.", k).With("path", "dataVariables")
		}
		switch x := v.(type) {
		case string:
			out[k] = x
		case json.Number:
			out[k] = x.String()
		case float64:
			out[k] = fmt.Sprint(x)
		case bool:
			out[k] = fmt.Sprint(x)
		case []any:
			b, _ := json.Marshal(x)
			out[k] = string(b)
		case nil:
			return nil, apperr.New(apperr.Invalid, "Data variable %s cannot be null (use \"\" for an optional value).", k).With("path", "dataVariables")
		default:
			return nil, apperr.New(apperr.Invalid, "Data variable %s must be a string or a number.", k).With("path", "dataVariables")
		}
	}
	return out, nil
}

// Render implements emails.Renderer for transactional sends.
func (s *Service) Render(ctx context.Context, x *emails.Send) (*emails.Rendered, error) {
	var p payload
	if err := json.Unmarshal(x.Payload, &p); err != nil {
		return nil, apperr.New(apperr.Invalid, "bad payload: %v", err)
	}
	pub, err := s.templates.PublishedTransactional(ctx, x.TeamID, x.SourceID)
	if err != nil {
		return nil, err
	}
	vals := &lmx.Values{Data: p.DataVariables}
	html, text := pub.Template.Render(vals, &pub.Fallbacks)
	r := &emails.Rendered{
		FromName:       lmx.Interpolate(pub.FromName, vals, &pub.Fallbacks),
		FromEmail:      lmx.Interpolate(pub.FromEmail, vals, &pub.Fallbacks),
		ReplyTo:        lmx.Interpolate(pub.ReplyTo, vals, &pub.Fallbacks),
		Subject:        lmx.Interpolate(pub.Subject, vals, &pub.Fallbacks),
		HTML:           html,
		Text:           text,
		EmailMessageID: pub.EmailMessageID,
	}
	for _, a := range p.Attachments {
		b, err := base64.StdEncoding.DecodeString(a.Data)
		if err != nil {
			return nil, apperr.New(apperr.Invalid, "bad attachment")
		}
		r.Attachments = append(r.Attachments, delivery.Attachment{Filename: a.Filename, ContentType: a.ContentType, Data: b})
	}
	return r, nil
}
