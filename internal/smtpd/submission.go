package smtpd

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/lasso-mail/lasso/internal/apperr"
)

// Submitter is what SMTP submission needs from the app.
type Submitter interface {
	// Authenticate returns the team of an API key (apperr.Unauthenticated
	// otherwise).
	Authenticate(ctx context.Context, apiKey string) (teamID string, err error)
	// Submit sends the JSON payload (the body of POST /transactional:
	// transactionalId, email, dataVariables, addToAudience, attachments) for
	// the team. It returns the same apperr errors as the HTTP API (Invalid,
	// NotFound, Conflict, TooLarge, RateLimited…); reply.go maps them.
	Submit(ctx context.Context, teamID string, payload []byte) error
}

// SubmissionConfig configures NewSubmission.
type SubmissionConfig struct {
	// Addr to listen on. Default ":587".
	Addr string
	// Hostname in the greeting. Default: the OS host name.
	Hostname string
	// TLSConfig for STARTTLS; required (AUTH is only offered after TLS).
	// See LoadOrCreateCert.
	TLSConfig *tls.Config
	// MaxMessageBytes is the largest message accepted (552 above). Default
	// 6 MB: a 4 MB payload with base64 attachments, MIME-encoded.
	MaxMessageBytes int64
	// SubmitTimeout bounds each call into the Submitter. Default 60 s.
	SubmitTimeout time.Duration
	// MaxAuthFailures closes a connection after that many failed AUTHs.
	// Default 3.
	MaxAuthFailures int
	Limits

	Submitter Submitter
	Logger    *slog.Logger
	// Now is the clock for the durations in logs. Default time.Now.
	Now func() time.Time
}

// DefaultSubmissionMaxBytes is the default SubmissionConfig.MaxMessageBytes.
const DefaultSubmissionMaxBytes = 6 << 20

// NewSubmission returns the SMTP submission server (Loops-compatible SMTP,
// spec §8): STARTTLS, then AUTH PLAIN or LOGIN with any user name and an API
// key as password; MAIL and RCPT only after AUTH; the envelope and the
// headers are ignored; the body's text part is the JSON send payload, handed
// to Submitter.Submit; errors are replies mirroring the HTTP API's.
func NewSubmission(cfg SubmissionConfig) *Server {
	if cfg.Addr == "" {
		cfg.Addr = ":587"
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultSubmissionMaxBytes
	}
	if cfg.SubmitTimeout <= 0 {
		cfg.SubmitTimeout = time.Minute
	}
	if cfg.MaxAuthFailures <= 0 {
		cfg.MaxAuthFailures = 3
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := newServer("submission", cfg.Addr, cfg.Hostname, cfg.Limits, cfg.Logger)
	s.needsTLS = true
	s.smtp.TLSConfig = cfg.TLSConfig
	s.smtp.MaxMessageBytes = cfg.MaxMessageBytes
	// Scripts send the JSON on one line, attachments included, without
	// MIME encoding: lines are bounded only by the message size.
	s.smtp.MaxLineLength = int(cfg.MaxMessageBytes)
	s.smtp.AllowInsecureAuth = false
	// The envelope is ignored, so internationalized addresses in it are fine.
	s.smtp.EnableSMTPUTF8 = true
	s.smtp.Backend = smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &submissionSession{s: s, cfg: &cfg, conn: trackedOf(c)}, nil
	})
	return s
}

// submissionSession is one client, from EHLO (again after STARTTLS) to QUIT.
type submissionSession struct {
	s            *Server
	cfg          *SubmissionConfig
	conn         *trackedConn
	teamID       string
	authFailures int
}

var _ smtp.AuthSession = (*submissionSession)(nil)

// AuthMechanisms is only asked once TLS is on (go-smtp refuses AUTH and
// doesn't advertise it before, since AllowInsecureAuth is false).
func (ss *submissionSession) AuthMechanisms() []string {
	return []string{sasl.Plain, sasl.Login}
}

func (ss *submissionSession) Auth(mech string) (sasl.Server, error) {
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(identity, username, password string) error {
			return ss.authenticate(password)
		}), nil
	case sasl.Login:
		return &loginServer{authenticate: func(username, password string) error {
			return ss.authenticate(password)
		}}, nil
	}
	return nil, smtp.ErrAuthUnknownMechanism
}

// authenticate checks an API key. The user name is ignored (Loops uses
// "loops"); the key is never logged.
func (ss *submissionSession) authenticate(apiKey string) error {
	if ss.authFailures >= ss.cfg.MaxAuthFailures {
		ss.conn.closeAfterReply()
		return replyTooManyAuthFailures
	}
	apiKey = strings.TrimSpace(apiKey)
	var team string
	var err error = apperr.New(apperr.Unauthenticated, "Invalid API key")
	if apiKey != "" {
		ctx, cancel := context.WithTimeout(ss.s.ctx, ss.cfg.SubmitTimeout)
		team, err = ss.cfg.Submitter.Authenticate(ctx, apiKey)
		cancel()
		if err == nil && team == "" {
			err = apperr.Unauthenticated
		}
	}
	if err != nil {
		r := reply(err)
		if errors.Is(err, apperr.Unauthenticated) {
			ss.authFailures++
			ss.s.log.Info("smtp auth failed", slog.String("remote", ss.conn.remote()), slog.Int("failures", ss.authFailures))
			if ss.authFailures >= ss.cfg.MaxAuthFailures {
				ss.conn.closeAfterReply()
			}
		} else if r == replyTemporary {
			ss.s.log.Error("smtp auth error", slog.String("remote", ss.conn.remote()), slog.Any("err", err))
		}
		return r
	}
	ss.teamID = team
	ss.s.log.Info("smtp authenticated", slog.String("remote", ss.conn.remote()), slog.String("team_id", team))
	return nil
}

func (ss *submissionSession) Mail(from string, opts *smtp.MailOptions) error {
	if ss.teamID == "" {
		return replyAuthRequired
	}
	return nil
}

// Rcpt accepts any recipient: the one that counts is the payload's "email".
func (ss *submissionSession) Rcpt(to string, opts *smtp.RcptOptions) error {
	if ss.teamID == "" {
		return replyAuthRequired
	}
	return nil
}

func (ss *submissionSession) Data(r io.Reader) error {
	if ss.teamID == "" {
		return replyAuthRequired
	}
	ss.conn.beginData()
	defer ss.conn.endData()
	start := ss.cfg.Now()
	raw, err := io.ReadAll(r)
	if err != nil {
		// go-smtp's "552 5.3.4" when over MaxMessageBytes; otherwise the
		// client went away or reset, and this reply is never read.
		return reply(err)
	}
	log := ss.s.log.With(slog.String("team_id", ss.teamID), slog.Int("bytes", len(raw)))
	payload, err := extractJSON(raw)
	if err == nil {
		ctx, cancel := context.WithTimeout(ss.s.ctx, ss.cfg.SubmitTimeout)
		err = ss.cfg.Submitter.Submit(ctx, ss.teamID, payload)
		cancel()
	}
	r2 := reply(err)
	ms := slog.Int64("duration_ms", ss.cfg.Now().Sub(start).Milliseconds())
	switch {
	case r2 == nil:
		log.Info("smtp submission accepted", ms)
		return nil
	case r2 == replyTemporary:
		log.Error("smtp submission failed", ms, slog.Any("err", err))
	default:
		// The reply text may quote the payload (a recipient, a variable):
		// only its code is logged.
		log.Info("smtp submission rejected", ms, slog.Int("code", r2.Code), slog.String("status", enhanced(r2)))
	}
	return r2
}

func (ss *submissionSession) Reset() {}

func (ss *submissionSession) Logout() error { return nil }

// loginServer is the server side of AUTH LOGIN (draft-murchison-sasl-login),
// which go-sasl only has as a client: "Username:", then "Password:".
type loginServer struct {
	step         int
	username     string
	authenticate func(username, password string) error
}

func (a *loginServer) Next(response []byte) (challenge []byte, done bool, err error) {
	switch a.step {
	case 0:
		if response == nil { // no initial response
			a.step = 1
			return []byte("Username:"), false, nil
		}
		a.username = string(response)
		a.step = 2
		return []byte("Password:"), false, nil
	case 1:
		a.username = string(response)
		a.step = 2
		return []byte("Password:"), false, nil
	case 2:
		a.step = 3
		return nil, true, a.authenticate(a.username, string(response))
	}
	return nil, false, sasl.ErrUnexpectedClientResponse
}
