package smtpd

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/emersion/go-smtp"
)

// BounceHandler receives what arrives at the return path.
type BounceHandler interface {
	// HandleBounce is called once per RCPT (the VERP address
	// bounce+<sendid>@…) with the raw message. An error makes the remote MTA
	// retry the whole message later (451), so the handler must be idempotent
	// and return nil for what it decides to drop (unknown sends, junk).
	HandleBounce(ctx context.Context, rcpt string, raw []byte) error
}

// IntakeConfig configures NewBounceIntake.
type IntakeConfig struct {
	// Addr to listen on. Default ":25".
	Addr string
	// Hostname in the greeting. Default: the OS host name.
	Hostname string
	// TLSConfig, when set, makes the server offer STARTTLS.
	TLSConfig *tls.Config
	// MaxMessageBytes is the largest report accepted (552 above). Default
	// 10 MB: a DSN may quote the whole original message.
	MaxMessageBytes int64
	// HandleTimeout bounds each HandleBounce call. Default 60 s.
	HandleTimeout time.Duration
	Limits

	Handler BounceHandler
	Logger  *slog.Logger
}

// DefaultIntakeMaxBytes is the default IntakeConfig.MaxMessageBytes.
const DefaultIntakeMaxBytes = 10 << 20

// NewBounceIntake returns the SMTP server of the return path: no AUTH, any
// MAIL FROM (bounces come from <>), RCPT TO only for VERP addresses
// bounce+<25-character send id>@any-domain (else 550 5.1.1), and each
// message handed to Handler once per accepted recipient.
func NewBounceIntake(cfg IntakeConfig) *Server {
	if cfg.Addr == "" {
		cfg.Addr = ":25"
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultIntakeMaxBytes
	}
	if cfg.HandleTimeout <= 0 {
		cfg.HandleTimeout = time.Minute
	}
	s := newServer("bounce intake", cfg.Addr, cfg.Hostname, cfg.Limits, cfg.Logger)
	s.smtp.TLSConfig = cfg.TLSConfig
	s.smtp.MaxMessageBytes = cfg.MaxMessageBytes
	// Returned messages may quote long lines; refusing them would lose the
	// report, so lines are bounded only by the message size.
	s.smtp.MaxLineLength = int(cfg.MaxMessageBytes)
	// Reports about internationalized addresses come with SMTPUTF8; nothing
	// is relayed, so accepting it is safe.
	s.smtp.EnableSMTPUTF8 = true
	s.smtp.Backend = smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &intakeSession{s: s, cfg: &cfg, conn: trackedOf(c)}, nil
	})
	return s
}

// IsReturnPath reports whether addr (with or without angle brackets) is a
// VERP return path the intake accepts: bounce+<25 letters or digits>@domain.
func IsReturnPath(addr string) bool {
	addr = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(addr), "<"), ">")
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 || at == len(addr)-1 {
		return false
	}
	local, domain := addr[:at], addr[at+1:]
	if len(local) != len("bounce+")+25 || !strings.EqualFold(local[:7], "bounce+") {
		return false
	}
	for i := 7; i < len(local); i++ {
		if !isASCIIAlnum(local[i]) {
			return false
		}
	}
	for i := 0; i < len(domain); i++ {
		c := domain[i]
		if !isASCIIAlnum(c) && c != '.' && c != '-' && c != '[' && c != ']' && c != ':' {
			return false
		}
	}
	return true
}

type intakeSession struct {
	s     *Server
	cfg   *IntakeConfig
	conn  *trackedConn
	rcpts []string
}

func (is *intakeSession) Mail(from string, opts *smtp.MailOptions) error {
	is.rcpts = is.rcpts[:0]
	return nil
}

func (is *intakeSession) Rcpt(to string, opts *smtp.RcptOptions) error {
	if !IsReturnPath(to) {
		return replyNoSuchUser
	}
	for _, r := range is.rcpts {
		if strings.EqualFold(r, to) {
			return nil // the same report once per address
		}
	}
	is.rcpts = append(is.rcpts, to)
	return nil
}

func (is *intakeSession) Data(r io.Reader) error {
	is.conn.beginData()
	defer is.conn.endData()
	raw, err := io.ReadAll(r)
	if err != nil {
		return reply(err)
	}
	for _, rcpt := range is.rcpts {
		ctx, cancel := context.WithTimeout(is.s.ctx, is.cfg.HandleTimeout)
		err := is.cfg.Handler.HandleBounce(ctx, rcpt, raw)
		cancel()
		if err != nil {
			is.s.log.Error("bounce handling failed", slog.String("rcpt", rcpt), slog.Int("bytes", len(raw)), slog.Any("err", err))
			return replyTemporary
		}
		is.s.log.Info("bounce received", slog.String("rcpt", rcpt), slog.Int("bytes", len(raw)), slog.String("remote", is.conn.remote()))
	}
	return nil
}

func (is *intakeSession) Reset() { is.rcpts = is.rcpts[:0] }

func (is *intakeSession) Logout() error { return nil }
