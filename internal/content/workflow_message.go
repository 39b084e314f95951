package content

import (
	"context"

	"github.com/lasso-mail/lasso/internal/lmx"
)

// WorkflowMessage compiles the email message of a workflow's
// SendEmailAction for sending: its current content with the team's current
// theme and components (workflow messages are not published; they are
// edited while the workflow is paused). apperr.NotFound for an unknown id.
// Not cached: a theme edit must reach the next send.
func (s *Service) WorkflowMessage(ctx context.Context, teamID, id string) (*Published, error) {
	m, err := s.message(ctx, s.db, teamID, id)
	if err != nil {
		return nil, err
	}
	tmpl, err := s.compile(ctx, s.db, m)
	if err != nil {
		return nil, err
	}
	return &Published{EmailMessageID: m.ID, Subject: m.Subject, PreviewText: m.PreviewText, FromName: m.FromName,
		FromEmail: m.FromAddress(), ReplyTo: m.ReplyToEmail, Template: tmpl,
		Fallbacks: lmx.Fallbacks{Contact: m.ContactFallbacks, Event: m.EventFallbacks, Data: m.DataFallbacks}}, nil
}
