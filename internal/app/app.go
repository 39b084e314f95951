// Package app is the composition root: it opens the database, migrates it,
// builds the services, registers job workers and mounts the HTTP surfaces.
// Only cmd/lasso and end-to-end tests import it.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lasso-mail/lasso/internal/accounts"
	"github.com/lasso-mail/lasso/internal/audience"
	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/content"
	"github.com/lasso-mail/lasso/internal/dashboard"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/delivery"
	"github.com/lasso-mail/lasso/internal/emails"
	"github.com/lasso-mail/lasso/internal/events"
	"github.com/lasso-mail/lasso/internal/httpapi"
	"github.com/lasso-mail/lasso/internal/queue"
	"github.com/lasso-mail/lasso/internal/ratelimit"
	"github.com/lasso-mail/lasso/internal/senders"
	"github.com/lasso-mail/lasso/internal/smtpd"
	"github.com/lasso-mail/lasso/internal/tracking"
	"github.com/lasso-mail/lasso/internal/transactional"
	"github.com/lasso-mail/lasso/internal/webhooks"
	"github.com/lasso-mail/lasso/internal/workflows"
)

// Config is everything the product can be told at start.
type Config struct {
	DataDir     string // default ./lasso-data
	DatabaseURL string // default: SQLite file in DataDir; postgres://… selects PostgreSQL
	HTTPAddr    string // default 127.0.0.1:8080
	SMTPAddr    string // default 127.0.0.1:2587
	PublicURL   string // default http://<HTTPAddr>
	SMTPRelay   string // smtp://user:pass@host:port (delivery)
	// RateLimit is the API requests per second per team (default 10; < 0 disables).
	RateLimit int
	// SuppressionRemovalLimit is removals per rolling 30 days per team (default 100).
	SuppressionRemovalLimit int
	DedicatedIPs            []string
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// WebhookRetrySchedule overrides the webhook retry delays (tests).
	WebhookRetrySchedule []time.Duration
	// WebhookAllowPrivate lets webhooks reach loopback and private
	// addresses (local development); by default only public ones.
	WebhookAllowPrivate bool
	// WorkflowTimerPoll, when > 0, caps how long (wall clock) a workflow
	// timer's job sleeps before checking Now again (tests that move Now).
	WorkflowTimerPoll time.Duration
	// Outbound selects the outbound path: "relay" (needs SMTPRelay), "mx"
	// (direct delivery) or "capture" (a local mailbox in the data dir). Empty:
	// relay when SMTPRelay is set, capture otherwise.
	Outbound string
	// Hostname is our FQDN for EHLO (default: the public URL's host).
	Hostname string
	// MX tuning for tests: a resolver pointed at a fake DNS server, the SMTP
	// port of every MX host, and permission to connect to loopback.
	MXResolver      *net.Resolver
	MXPort          int
	MXAllowLoopback bool
	MXDisableTLS    bool
	// SendConcurrency is the number of emails delivered at once per node
	// (default 10, the relay's connection limit).
	SendConcurrency int
	// SendRetrySchedule overrides the soft-bounce retry delays (tests).
	SendRetrySchedule []time.Duration
	// BounceAddr is the SMTP listener for bounces and complaints sent to the
	// VERP return path (default 127.0.0.1:2525; production: :25). "off" disables.
	BounceAddr string
	// BlobStore selects where uploaded images live: "" is the data dir; an
	// s3://ACCESS:SECRET@host/bucket/prefix?region=…&tls=… URL selects an
	// S3-compatible bucket (nodes of a cluster don't share a disk).
	BlobStore string
	// SMTPTLSCert and SMTPTLSKey are the submission certificate (PEM files);
	// empty: a self-signed one generated into the data dir.
	SMTPTLSCert, SMTPTLSKey string
	// DNSServer (host:port), when set, answers the dashboard's domain
	// verification lookups instead of the system resolver (tests, and a
	// hidden --dns-server flag of serve).
	DNSServer string
}

func (c *Config) defaults() {
	if c.DataDir == "" {
		c.DataDir = "./lasso-data"
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = "127.0.0.1:8080"
	}
	if c.SMTPAddr == "" {
		c.SMTPAddr = "127.0.0.1:2587"
	}
	if c.SendConcurrency == 0 {
		c.SendConcurrency = 10
	}
	if c.BounceAddr == "" {
		c.BounceAddr = "127.0.0.1:2525"
	}
	if c.RateLimit == 0 {
		c.RateLimit = 10
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// App is the running product's parts.
type App struct {
	Cfg      Config
	Log      *slog.Logger
	DB       db.DB
	Queue    *queue.Queue
	Registry *prometheus.Registry
	Accounts *accounts.Service
	Contacts *contacts.Service
	Events   *events.Service
	Senders  *senders.Service
	Content  *content.Service
	// Audience counts audiences and stores segments (§5.13, §11).
	Audience *audience.Service
	// Workflows stores workflows and their graphs (§5.15, §5.16).
	Workflows *workflows.Service
	// Engine runs contacts through active workflows.
	Engine   *workflows.Engine
	Webhooks *webhooks.Service
	Emails   *emails.Service
	// Transactional sends transactional email over HTTP and SMTP.
	Transactional *transactional.Service
	Outbound      delivery.Transport
	Capture       *delivery.Capture // the local mailbox, when Outbound is capture
	API           *httpapi.API
	// Dashboard is the web app mounted at /.
	Dashboard *dashboard.Dashboard

	workers        *queue.Workers
	limiter        ratelimit.Limiter
	trackingSigner *tracking.Signer
	submission     *smtpd.Server
	intake         *smtpd.Server

	mu       sync.Mutex
	httpSrv  *http.Server
	httpAddr net.Addr
}

// Open opens the database (migrating it) and builds every service. It does
// not start anything: Serve does.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	cfg.defaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.DatabaseURL == "" {
		if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
			return nil, fmt.Errorf("create data dir: %w", err)
		}
		cfg.DatabaseURL = filepath.Join(cfg.DataDir, "lasso.db")
	}
	d, err := db.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	if err := Migrate(ctx, d); err != nil {
		d.Close()
		return nil, err
	}
	a := &App{Cfg: cfg, Log: log, DB: d, Registry: prometheus.NewRegistry()}
	a.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	a.workers = queue.NewWorkers()
	a.Accounts = accounts.New(d, cfg.Now)
	a.Contacts = contacts.New(d, contacts.Config{SuppressionRemovalLimit: cfg.SuppressionRemovalLimit}, cfg.Now)
	a.Senders = senders.New(d, a.publicHost(), cfg.Now)

	eventW := &eventWorker{}
	queue.AddWorker(a.workers, eventW)
	stepWorker := &workflows.StepWorker{}
	queue.AddWorker(a.workers, stepWorker)
	rearmWorker := &workflows.RearmWorker{}
	queue.AddWorker(a.workers, rearmWorker)
	changedWorker := &workflows.ContactChangedWorker{}
	queue.AddWorker(a.workers, changedWorker)
	webhookWorker := &webhooks.Worker{DB: d, Now: cfg.Now, Schedule: cfg.WebhookRetrySchedule, Client: webhooks.NewClient(cfg.WebhookAllowPrivate)}
	queue.AddWorker(a.workers, webhookWorker)
	housekeeping := &housekeepingWorker{log: log}
	queue.AddWorker(a.workers, housekeeping)
	recheckWorker := &dashboard.RecheckWorker{}
	queue.AddWorker(a.workers, recheckWorker)
	if err := a.openOutbound(); err != nil {
		d.Close()
		return nil, err
	}
	sendWorker := &emails.Worker{Transport: a.Outbound, Signer: a.Senders, BounceDomain: senders.BounceDomain}
	queue.AddWorker(a.workers, sendWorker)

	a.Queue, err = queue.New(d, a.workers, queue.Config{Logger: log, Registerer: a.Registry,
		Queues: map[string]int{emails.Queue: cfg.SendConcurrency},
		Periodic: []queue.Periodic{{Interval: time.Hour, Args: func() queue.Args { return HousekeepingArgs{} }},
			{Interval: dashboard.RecheckInterval, Args: func() queue.Args { return dashboard.RecheckArgs{} }}}})
	if err != nil {
		d.Close()
		return nil, err
	}
	a.Webhooks = webhooks.New(d, a.Queue, cfg.Now)
	a.Contacts.SetAnnouncer(a.Webhooks)
	a.Emails = emails.NewService(d, a.Queue, a.Contacts, a.Webhooks, cfg.Now)
	a.Emails.Schedule = cfg.SendRetrySchedule
	sendWorker.Service = a.Emails
	a.Events = events.New(d, a.Contacts, a.Queue, cfg.Now)
	a.Audience = audience.New(d, audience.Config{Now: cfg.Now})
	var blobs content.BlobStore = content.DirBlobs{Dir: filepath.Join(cfg.DataDir, "uploads")}
	if cfg.BlobStore != "" {
		s3, err := content.NewS3Blobs(cfg.BlobStore)
		if err != nil {
			d.Close()
			return nil, err // never contains the secret
		}
		if err := s3.Check(ctx); err != nil {
			d.Close()
			return nil, fmt.Errorf("blob store: %w", err)
		}
		blobs = s3
	}
	a.Content = content.New(d, content.Config{
		PublicURL: a.PublicURL(),
		Domains:   a.Senders,
		ContactProperties: func(ctx context.Context, teamID string) ([]string, error) {
			ps, err := a.Contacts.ListProperties(ctx, teamID, true)
			names := make([]string, len(ps))
			for i, p := range ps {
				names[i] = p.Key
			}
			return names, err
		},
		Blobs:  blobs,
		Logger: log,
		Now:    cfg.Now,
	})
	a.Transactional = transactional.New(d, a.Content, a.Contacts, a.Emails, a.Senders, cfg.Now)
	a.Content.SetPreviewSender(a.Emails)
	a.limiter = ratelimit.New(d, cfg.RateLimit, cfg.Now)
	if err := a.openTracking(ctx, sendWorker); err != nil {
		d.Close()
		return nil, err
	}
	a.Workflows = workflows.New(d, workflows.Config{Messages: a.Content, Filters: a.Audience, Properties: a.Contacts, Now: cfg.Now})
	a.Engine = workflows.NewEngine(a.Workflows, d, workflows.EngineConfig{Queue: a.Queue, Emails: a.Emails, Audience: a.Audience,
		Messages: a.Content, Contacts: a.Contacts, Events: a.Events, Domains: a.Senders, Now: cfg.Now, TimerPoll: cfg.WorkflowTimerPoll, Logger: log})
	eventW.engine, stepWorker.Engine, changedWorker.Engine, rearmWorker.Engine = a.Engine, a.Engine, a.Engine, a.Engine
	a.Contacts.SetChangeHook(a.Engine)
	a.Emails.Register(emails.SourceLoop, a.Engine)
	a.API = httpapi.New(httpapi.Deps{
		Transactional: a.Transactional,
		Accounts:      a.Accounts,
		Contacts:      a.Contacts,
		Events:        a.Events,
		Limiter:       ratelimit.New(d, cfg.RateLimit, cfg.Now),
		Logger:        log,
		Registerer:    a.Registry,
		DedicatedIPs:  cfg.DedicatedIPs,
		PublicURL:     a.PublicURL(),
		Content:       a.Content,
		Audience:      a.Audience,
		Workflows:     a.Workflows,
		SendMetrics:   a.Emails,
	})
	a.Dashboard = dashboard.New(dashboard.Deps{DB: d, Accounts: a.Accounts, Contacts: a.Contacts, Senders: a.Senders,
		Webhooks: a.Webhooks, Emails: a.Emails, Content: a.Content, Workflows: a.Workflows, Capture: a.Capture, Resolver: dashboard.Resolver(cfg.DNSServer),
		PublicURL: a.PublicURL(), DataDir: cfg.DataDir, Logger: log, Now: cfg.Now})
	recheckWorker.Dashboard = a.Dashboard
	housekeeping.tasks = []pruneTask{
		{"webhook history", a.Webhooks.Prune},
		{"idempotency keys", a.Events.PruneIdempotencyKeys},
		{"uploads", a.Content.PruneUploads},
		{"sessions", a.Dashboard.PruneSessions},
	}
	return a, nil
}

// Migrate applies the schema and queue migrations under the cluster-wide
// migration lock, so several nodes may start at once.
func Migrate(ctx context.Context, d db.DB) error {
	return db.WithMigrationLock(ctx, d, func() error {
		if err := db.Migrate(ctx, d); err != nil {
			return err
		}
		return queue.Migrate(ctx, d)
	})
}

// PublicURL is the base URL recipients and clients follow.
func (a *App) PublicURL() string {
	if a.Cfg.PublicURL != "" {
		return strings.TrimSuffix(a.Cfg.PublicURL, "/")
	}
	return "http://" + a.Cfg.HTTPAddr
}

func (a *App) publicHost() string {
	u, err := url.Parse(a.PublicURL())
	if err != nil || u.Hostname() == "" {
		return "localhost"
	}
	return u.Hostname()
}

// Close releases the outbound connections and the database.
func (a *App) Close() error {
	if a.Dashboard != nil {
		a.Dashboard.Close()
	}
	if a.Outbound != nil {
		_ = a.Outbound.Close()
	}
	return a.DB.Close()
}

// OutboundMode says which outbound path the app uses.
func (a *App) OutboundMode() string {
	switch {
	case a.Cfg.Outbound != "":
		return a.Cfg.Outbound
	case a.Cfg.SMTPRelay != "":
		return "relay"
	}
	return "capture"
}

func (a *App) hostname() string {
	if a.Cfg.Hostname != "" {
		return a.Cfg.Hostname
	}
	if h := a.publicHost(); h != "localhost" && net.ParseIP(h) == nil {
		return h
	}
	if h, err := os.Hostname(); err == nil && strings.Contains(h, ".") {
		return h
	}
	return "localhost.localdomain"
}

func (a *App) openOutbound() error {
	var err error
	switch a.OutboundMode() {
	case "relay":
		if a.Cfg.SMTPRelay == "" {
			return fmt.Errorf("outbound relay needs --smtp-relay")
		}
		a.Outbound, err = delivery.NewRelay(a.Cfg.SMTPRelay, delivery.RelayConfig{Hostname: a.hostname(), Logger: a.Log})
	case "mx":
		a.Outbound, err = delivery.NewMX(delivery.MXConfig{Hostname: a.hostname(), Resolver: a.Cfg.MXResolver, Port: a.Cfg.MXPort,
			AllowLoopback: a.Cfg.MXAllowLoopback, DisableTLS: a.Cfg.MXDisableTLS, Logger: a.Log})
	case "capture":
		a.Capture, err = delivery.NewCapture(filepath.Join(a.Cfg.DataDir, "mailbox"), a.Cfg.Now)
		a.Outbound = a.Capture
	default:
		return fmt.Errorf("unknown outbound mode %q (relay, mx or capture)", a.Cfg.Outbound)
	}
	if err != nil {
		return fmt.Errorf("outbound: %w", err)
	}
	return nil
}

// Handler is every HTTP surface on one mux.
func (a *App) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "application/json")
		if err := a.DB.Ping(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status":"database unreachable"}` + "\n"))
			return
		}
		_, _ = w.Write([]byte(`{"status":"ready"}` + "\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.Registry, promhttp.HandlerOpts{}))
	mux.Handle("/api/", a.API)
	mux.Handle("/v1/", a.API)
	mux.Handle("PUT /uploads/{id}", a.API.UploadHandler())
	mux.Handle("GET /assets/{id}/{filename}", a.API.AssetHandler())
	trackingHandler := tracking.Handler(tracking.Deps{Signer: a.trackingSigner, Recorder: a.Emails, Logger: a.Log})
	mux.Handle("/t/", trackingHandler)
	mux.Handle("/unsubscribe/", trackingHandler)
	mux.Handle("/", a.Dashboard)
	return mux
}

// Serve starts the queue workers and the HTTP server and blocks until ctx
// ends, then shuts down gracefully (bounded by 15 s).
func (a *App) Serve(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.Cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen http: %w", err)
	}
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	a.mu.Lock()
	a.httpSrv, a.httpAddr = srv, ln.Addr()
	a.mu.Unlock()
	if err := a.Queue.Start(ctx); err != nil {
		ln.Close()
		return err
	}
	if err := a.startSMTP(ctx); err != nil {
		ln.Close()
		_ = a.Queue.Stop(ctx)
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	a.Log.Info("lasso serving", slog.String("http", ln.Addr().String()), slog.String("public_url", a.PublicURL()),
		slog.String("smtp_submission", a.SMTPAddr()), slog.String("bounce_intake", a.BounceAddr()),
		slog.String("outbound", a.OutboundMode()), slog.String("database", string(a.DB.Dialect())))
	a.Dashboard.LogSetupURL(ctx)

	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	a.Log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	herr := srv.Shutdown(sctx)
	serr := a.stopSMTP(sctx)
	qerr := a.Queue.Stop(sctx)
	return errors.Join(herr, serr, qerr)
}

// HTTPAddr returns the address the server listens on once Serve has started.
func (a *App) HTTPAddr() net.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.httpAddr
}
