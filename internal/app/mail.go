package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/delivery"
	"github.com/lasso-mail/lasso/internal/emails"
	"github.com/lasso-mail/lasso/internal/httpapi"
	"github.com/lasso-mail/lasso/internal/ratelimit"
	"github.com/lasso-mail/lasso/internal/smtpd"
	"github.com/lasso-mail/lasso/internal/tracking"
)

// smtpSubmitter adapts SMTP submission to the transactional send: the same
// API keys, the same team rate limit and the same validation as HTTP.
type smtpSubmitter struct {
	a       *App
	limiter ratelimit.Limiter
}

func (s smtpSubmitter) Authenticate(ctx context.Context, key string) (string, error) {
	t, err := s.a.Accounts.Authenticate(ctx, key)
	return t.ID, err
}

func (s smtpSubmitter) Submit(ctx context.Context, teamID string, payload []byte) error {
	d, err := s.limiter.Allow(ctx, teamID)
	if err != nil {
		return err
	}
	if !d.Allowed {
		return apperr.New(apperr.RateLimited, "Rate limit of %d requests per second exceeded.", d.Limit)
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return apperr.New(apperr.Invalid, "The message body must be a JSON object.")
	}
	req, err := httpapi.ParseTransactional(m)
	if err != nil {
		return err
	}
	_, err = s.a.Transactional.Send(ctx, teamID, req)
	return err
}

// openTracking builds the signer of tracking links and plugs link rewriting
// and List-Unsubscribe into the send worker.
func (a *App) openTracking(ctx context.Context, w *emails.Worker) error {
	secret, err := db.Secret(ctx, a.DB, "tracking_signing")
	if err != nil {
		return fmt.Errorf("tracking secret: %w", err)
	}
	if a.trackingSigner, err = tracking.NewSigner(secret); err != nil {
		return err
	}
	base := a.PublicURL()
	w.Track = func(html string, x *emails.Send) string {
		return string(tracking.Rewrite([]byte(html), base, x.ID, a.trackingSigner))
	}
	w.Unsubscribe = func(x *emails.Send) *delivery.ListUnsubscribe {
		// RFC 8058 one-click needs https; a plain-http development URL still
		// gets List-Unsubscribe.
		return &delivery.ListUnsubscribe{URL: a.trackingSigner.UnsubscribeURL(base, x.ID), OneClick: strings.HasPrefix(base, "https://")}
	}
	return nil
}

// startSMTP starts the submission listener (STARTTLS with the configured
// certificate or a self-signed one in the data dir) and the bounce intake.
func (a *App) startSMTP(ctx context.Context) error {
	host := a.hostname()
	if a.Cfg.SMTPAddr != "" && a.Cfg.SMTPAddr != "off" {
		tlsCfg, err := smtpd.LoadOrCreateCert(a.Cfg.SMTPTLSCert, a.Cfg.SMTPTLSKey, a.Cfg.DataDir, host)
		if err != nil {
			return fmt.Errorf("smtp tls: %w", err)
		}
		a.submission = smtpd.NewSubmission(smtpd.SubmissionConfig{Addr: a.Cfg.SMTPAddr, Hostname: host, TLSConfig: tlsCfg,
			Submitter: smtpSubmitter{a: a, limiter: a.limiter}, Logger: a.Log})
		if err := a.submission.Start(ctx); err != nil {
			return fmt.Errorf("smtp submission: %w", err)
		}
	}
	if a.Cfg.BounceAddr != "" && a.Cfg.BounceAddr != "off" {
		a.intake = smtpd.NewBounceIntake(smtpd.IntakeConfig{Addr: a.Cfg.BounceAddr, Hostname: host, Handler: a.Emails, Logger: a.Log})
		if err := a.intake.Start(ctx); err != nil {
			return fmt.Errorf("bounce intake: %w", err)
		}
	}
	return nil
}

// SMTPAddr and BounceAddr return the listeners' addresses once started.
func (a *App) SMTPAddr() string {
	if a.submission == nil {
		return ""
	}
	return a.submission.Addr().String()
}

func (a *App) BounceAddr() string {
	if a.intake == nil {
		return ""
	}
	return a.intake.Addr().String()
}

func (a *App) stopSMTP(ctx context.Context) error {
	var errs []string
	for _, s := range []*smtpd.Server{a.submission, a.intake} {
		if s != nil {
			if err := s.Stop(ctx); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("stop smtp: %s", strings.Join(errs, "; "))
	}
	return nil
}
