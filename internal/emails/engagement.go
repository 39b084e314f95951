package emails

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/tracking"
)

// The methods below apply what recipients do with marketing mail (they
// implement tracking.Recorder). Opens and clicks record their first time
// on the send (history, webhook); later ones are counted in the history only.

// Opened records an open of a send.
func (s *Service) Opened(ctx context.Context, sendID string) error {
	return s.engage(ctx, sendID, "opened_at", StatusOpened, "email.opened", "")
}

// Clicked records a click on a link of a send.
func (s *Service) Clicked(ctx context.Context, sendID, url string) error {
	return s.engage(ctx, sendID, "clicked_at", StatusClicked, "email.clicked", url)
}

func (s *Service) engage(ctx context.Context, sendID, column, status, event, detail string) error {
	return s.db.InTx(ctx, func(tx db.Tx) error {
		x, err := s.Get(ctx, tx, sendID)
		if err != nil {
			return err
		}
		n, err := tx.Exec(ctx, `UPDATE sends SET `+column+` = $2 WHERE id = $1 AND `+column+` IS NULL`, sendID, s.now().UnixMilli())
		if err != nil {
			return err
		}
		if err := s.history(ctx, tx, sendID, status, detail); err != nil {
			return err
		}
		if n == 0 {
			return nil // not the first time
		}
		return s.emit(ctx, tx, x, event)
	})
}

// Unsubscribe unsubscribes the recipient of a send from everything, or from
// one list when listID is set.
func (s *Service) Unsubscribe(ctx context.Context, sendID, listID string) error {
	return s.changeSubscription(ctx, sendID, func(in *contacts.Upsert) {
		if listID != "" {
			in.MailingLists = map[string]bool{listID: false}
		} else {
			in.Props = map[string]any{"subscribed": false}
		}
	}, "unsubscribed", "email.unsubscribed")
}

// Resubscribe subscribes the recipient of a send again.
func (s *Service) Resubscribe(ctx context.Context, sendID string) error {
	return s.changeSubscription(ctx, sendID, func(in *contacts.Upsert) {
		in.Props = map[string]any{"subscribed": true}
	}, "resubscribed", "email.resubscribed")
}

// SubscribeList adds the recipient of a send to a public list.
func (s *Service) SubscribeList(ctx context.Context, sendID, listID string) error {
	return s.changeSubscription(ctx, sendID, func(in *contacts.Upsert) {
		in.MailingLists = map[string]bool{listID: true}
	}, "list subscribed", "")
}

func (s *Service) changeSubscription(ctx context.Context, sendID string, change func(*contacts.Upsert), detail, event string) error {
	return s.db.InTx(ctx, func(tx db.Tx) error {
		x, err := s.Get(ctx, tx, sendID)
		if err != nil {
			return err
		}
		in := contacts.Upsert{Email: x.Recipient}
		change(&in)
		for lid := range in.MailingLists {
			l, err := s.contacts.GetListTx(ctx, tx, x.TeamID, lid)
			if err != nil {
				return err
			}
			if !l.IsPublic && in.MailingLists[lid] {
				return apperr.New(apperr.Invalid, "This list is not public.")
			}
		}
		if _, err := s.contacts.UpsertTx(ctx, tx, x.TeamID, in); err != nil {
			return err
		}
		if err := s.history(ctx, tx, sendID, detail, ""); err != nil {
			return err
		}
		if event == "" {
			return nil
		}
		return s.emit(ctx, tx, x, event)
	})
}

// Preferences describes the recipient of a send for the preferences page.
func (s *Service) Preferences(ctx context.Context, sendID string) (tracking.Prefs, error) {
	x, err := s.Get(ctx, s.db, sendID)
	if err != nil {
		return tracking.Prefs{}, err
	}
	p := tracking.Prefs{Email: tracking.MaskEmail(x.Recipient), Subscribed: true}
	c, err := s.contacts.Find(ctx, x.TeamID, contacts.Identity{Email: x.Recipient})
	if err != nil && !errors.Is(err, apperr.NotFound) {
		return p, err
	}
	member := map[string]bool{}
	if c != nil {
		p.Subscribed = c.Subscribed
		for _, l := range c.MailingLists {
			member[l] = true
		}
	}
	lists, err := s.contacts.Lists(ctx, x.TeamID)
	if err != nil {
		return p, err
	}
	for _, l := range lists {
		if !l.IsPublic && !member[l.ID] {
			continue
		}
		d := ""
		if l.Description != nil {
			d = *l.Description
		}
		p.Lists = append(p.Lists, tracking.PrefList{ID: l.ID, Name: l.Name, Description: d, Member: member[l.ID]})
	}
	return p, nil
}

// preview is the payload of a preview send: the rendered message itself.
type preview struct {
	Subject, HTML, Text, FromName, FromEmail, ReplyTo string
}

type previewRenderer struct{}

func (previewRenderer) Render(_ context.Context, x *Send) (*Rendered, error) {
	var p preview
	if err := json.Unmarshal(x.Payload, &p); err != nil {
		return nil, apperr.New(apperr.Invalid, "bad preview payload")
	}
	return &Rendered{Subject: "[Preview] " + p.Subject, HTML: p.HTML, Text: p.Text, FromName: p.FromName, FromEmail: p.FromEmail, ReplyTo: p.ReplyTo}, nil
}

// SendPreview sends a rendered preview to each address through the outbound
// path (implements content.PreviewSender).
func (s *Service) SendPreview(ctx context.Context, teamID string, to []string, subject, html, text, fromName, fromEmail, replyTo string) error {
	return s.db.InTx(ctx, func(tx db.Tx) error {
		for _, addr := range to {
			addr = strings.TrimSpace(addr)
			if _, err := contacts.NormalizeEmail(addr); err != nil {
				return apperr.New(apperr.Invalid, "Invalid email address: %s", addr)
			}
			if _, err := s.Enqueue(ctx, tx, New{TeamID: teamID, Recipient: addr, SourceType: SourcePreview, SourceID: "preview", SourceName: "Preview",
				Payload: preview{Subject: subject, HTML: html, Text: text, FromName: fromName, FromEmail: fromEmail, ReplyTo: replyTo}}); err != nil {
				return err
			}
		}
		return nil
	})
}
