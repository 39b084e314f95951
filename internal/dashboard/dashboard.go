// Package dashboard is the web app served by `lasso serve` under / (the API
// lives under /api/): accounts (setup, login, sessions, invitations), API
// keys, sending domains with live DNS verification, the audience (contacts,
// lists), webhooks, the outbox and CSV import.
//
// Pages are rendered on the server with html/template, one typed data struct
// per page; htmx 2 (vendored, embedded) swaps small fragments. Nothing is
// loaded from a CDN, so the dashboard works offline.
//
// # Security
//
//   - Passwords are hashed with argon2id. Sessions are random tokens whose
//     SHA-256 is stored in the database, so any node can serve any session.
//   - Cookies are HttpOnly, SameSite=Lax, and Secure when the public URL is
//     https.
//   - Every state-changing request carries a CSRF token: a hidden form field
//     or the X-CSRF-Token header that htmx sends (hx-headers on <body>). The
//     token is per session; before login it is a double-submit cookie.
//     net/http's CrossOriginProtection rejects cross-origin requests too.
//   - Failed logins are counted in the database per address and per client
//     IP; past the limit, logins are refused for the rest of the window.
//   - A user belongs to one team and every query is scoped to it.
//
// It imports the domain services and never the HTTP API.
package dashboard

import (
	"context"
	"embed"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/accounts"
	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/content"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/delivery"
	"github.com/lasso-mail/lasso/internal/emails"
	"github.com/lasso-mail/lasso/internal/senders"
	"github.com/lasso-mail/lasso/internal/webhooks"
	"github.com/lasso-mail/lasso/internal/workflows"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Deps are the services the dashboard uses.
type Deps struct {
	DB       db.DB
	Accounts *accounts.Service
	Contacts *contacts.Service
	Senders  *senders.Service
	Webhooks *webhooks.Service
	Emails   *emails.Service
	// Content and Workflows back the read views of transactional emails
	// and workflows (nil hides them).
	Content   *content.Service
	Workflows *workflows.Service
	// Capture is the local mailbox (nil when mail goes out for real).
	Capture *delivery.Capture
	// Resolver answers the DNS lookups of domain verification (default
	// net.DefaultResolver; tests point it at a fake DNS server).
	Resolver *net.Resolver
	// PublicURL is the base URL of the dashboard (https makes cookies Secure).
	PublicURL string
	// DataDir holds uploaded CSV files (under DataDir/imports).
	DataDir string
	Logger  *slog.Logger
	Now     func() time.Time
	// LoginLimit is the failed logins allowed per address within
	// LoginWindow (default 5; per client IP it is 4 times that).
	LoginLimit  int
	LoginWindow time.Duration // default 15 minutes
}

// Dashboard is the dashboard's HTTP handler.
type Dashboard struct {
	deps    Deps
	store   *store
	log     *slog.Logger
	now     func() time.Time
	pages   *pages
	secure  bool
	handler http.Handler
	imports *importer
}

// New returns the dashboard. It does no I/O.
func New(deps Deps) *Dashboard {
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Resolver == nil {
		deps.Resolver = net.DefaultResolver
	}
	if deps.LoginLimit <= 0 {
		deps.LoginLimit = 5
	}
	if deps.LoginWindow <= 0 {
		deps.LoginWindow = 15 * time.Minute
	}
	d := &Dashboard{
		deps:  deps,
		store: &store{db: deps.DB, now: deps.Now},
		log:   deps.Logger.With("component", "dashboard"),
		now:   deps.Now,
		pages: mustParsePages(),
	}
	if u, err := url.Parse(deps.PublicURL); err == nil && u.Scheme == "https" {
		d.secure = true
	}
	d.imports = newImporter(d)
	d.handler = d.routes()
	return d
}

// ServeHTTP implements http.Handler.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.handler.ServeHTTP(w, r)
}

// SetupURL returns the one-time URL that creates the first team and its
// owner, or "" once a user exists. Each call while no user exists issues a
// new token (all stay valid until setup is done).
func (d *Dashboard) SetupURL(ctx context.Context) (string, error) {
	n, err := d.store.userCount(ctx)
	if err != nil || n > 0 {
		return "", err
	}
	tok, err := d.store.newSetupToken(ctx)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(d.deps.PublicURL, "/") + "/setup?token=" + url.QueryEscape(tok), nil
}

// LogSetupURL logs the setup URL when the dashboard has no user yet.
func (d *Dashboard) LogSetupURL(ctx context.Context) {
	u, err := d.SetupURL(ctx)
	if err != nil {
		d.log.ErrorContext(ctx, "dashboard setup url", slog.String("error", err.Error()))
		return
	}
	if u != "" {
		d.log.InfoContext(ctx, "no dashboard user yet: open the setup url to create the team and its owner", slog.String("setup_url", u))
	}
}

// Close stops running imports (they resume as failed on the next start).
func (d *Dashboard) Close() { d.imports.close() }

func staticHandler() http.Handler {
	sub, _ := fs.Sub(staticFS, "static")
	fsrv := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		fsrv.ServeHTTP(w, r)
	})
}

// Resolver returns a pure-Go resolver that sends every query to the DNS
// server at addr (host:port), or nil (the system resolver) when addr is "".
// Tests and `lasso serve --dns-server` use it to verify domains against a
// fake DNS server.
func Resolver(addr string) *net.Resolver {
	if addr == "" {
		return nil
	}
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var nd net.Dialer
			if strings.HasPrefix(network, "tcp") {
				return nd.DialContext(ctx, "tcp", addr)
			}
			return nd.DialContext(ctx, "udp", addr)
		},
	}
}
