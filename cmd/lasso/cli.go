package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"strings"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kong"

	"github.com/lasso-mail/lasso/internal/accounts"
	"github.com/lasso-mail/lasso/internal/app"
	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/bounce"
	"github.com/lasso-mail/lasso/internal/content"
	"github.com/lasso-mail/lasso/internal/delivery"
	"github.com/lasso-mail/lasso/internal/workflows"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// Globals are the flags every command takes.
type Globals struct {
	DataDir     string `name:"data-dir" env:"LASSO_DATA_DIR" default:"./lasso-data" help:"Directory for the SQLite database, captured mail and uploads."`
	DatabaseURL string `name:"database-url" env:"LASSO_DATABASE_URL" help:"Database URL. Default: a SQLite file in the data dir; postgres://… selects PostgreSQL."`
	LogFormat   string `name:"log-format" env:"LASSO_LOG_FORMAT" default:"text" enum:"text,json" help:"Log format: text or json."`
	LogLevel    string `name:"log-level" env:"LASSO_LOG_LEVEL" default:"info" enum:"debug,info,warn,error" help:"Minimum log level."`
}

type cli struct {
	Globals

	Serve     serveCmd     `cmd:"" help:"Run the HTTP API, SMTP listener and background workers."`
	Migrate   migrateCmd   `cmd:"" help:"Create or upgrade the database schema (serve also does this at start)."`
	Version   versionCmd   `cmd:"" help:"Print the version."`
	Keys      keysCmd      `cmd:"" help:"Manage API keys."`
	Lists     listsCmd     `cmd:"" help:"Manage mailing lists."`
	Domains   domainsCmd   `cmd:"" help:"Manage sending domains."`
	Webhooks  webhooksCmd  `cmd:"" help:"Manage the team's webhook endpoint."`
	Workflows workflowsCmd `cmd:"" help:"Start, pause and resume workflows; inspect their runs."`
	Bounce    bounceCmd    `cmd:"" help:"Bounce and complaint tools."`
	Mailbox   mailboxCmd   `cmd:"" help:"The local capture mailbox (outgoing mail when no relay is configured)."`
}

type mailboxCmd struct {
	List mailboxListCmd `cmd:"" help:"List captured messages, newest first."`
	Show mailboxShowCmd `cmd:"" help:"Print a captured message (raw RFC 5322)."`
}

type mailboxListCmd struct{}

func (mailboxListCmd) Run(e *env) error {
	c, err := delivery.NewCapture(filepath.Join(e.g.DataDir, "mailbox"), nil)
	if err != nil {
		return err
	}
	msgs, err := c.List()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRECEIVED\tFROM\tTO\tSUBJECT")
	for _, m := range msgs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.ID, m.Time.Format(time.RFC3339), m.From, strings.Join(m.To, ","), m.Subject)
	}
	return tw.Flush()
}

type mailboxShowCmd struct {
	ID string `arg:"" help:"Message id (from mailbox list)."`
}

func (m mailboxShowCmd) Run(e *env) error {
	c, err := delivery.NewCapture(filepath.Join(e.g.DataDir, "mailbox"), nil)
	if err != nil {
		return err
	}
	raw, err := c.Read(m.ID)
	if err != nil {
		return err
	}
	_, err = e.stdout.Write(raw)
	return err
}

type bounceCmd struct {
	Parse bounceParseCmd `cmd:"" help:"Parse bounce/DSN/ARF messages; prints one JSON line per file."`
}

type bounceParseCmd struct {
	Files []string `arg:"" type:"existingfile" help:"Raw message files (.eml)."`
}

func (b bounceParseCmd) Run(e *env) error {
	for _, f := range b.Files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		r, _ := bounce.Parse(raw) // a report comes back even for unreadable input
		if err := bounce.WriteJSONLine(e.stdout, filepath.Base(f), r); err != nil {
			return err
		}
	}
	return nil
}

type env struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	g      *Globals
}

func (e *env) logger() *slog.Logger {
	lvl := slog.LevelInfo
	_ = lvl.UnmarshalText([]byte(e.g.LogLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	if e.g.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(e.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(e.stderr, opts))
}

func (e *env) config() app.Config {
	return app.Config{DataDir: e.g.DataDir, DatabaseURL: e.g.DatabaseURL}
}

// openTeam opens the app and finds the team an admin command names.
func (e *env) openTeam(team string) (*app.App, accounts.Team, error) {
	a, err := e.open(e.config())
	if err != nil {
		return nil, accounts.Team{}, err
	}
	t, err := a.Accounts.TeamByName(e.ctx, team)
	if err != nil {
		a.Close()
		return nil, accounts.Team{}, err
	}
	return a, t, nil
}

// open opens the app for an admin command (quiet logs).
func (e *env) open(cfg app.Config) (*app.App, error) {
	return app.Open(e.ctx, cfg, nil)
}

func runCLI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c cli
	vars := kong.Vars{"version": version}
	exit := -1
	parser, err := kong.New(&c,
		kong.Name("lasso"),
		kong.Description("Lasso: self-hosted marketing and transactional email with a Loops-compatible API."),
		kong.UsageOnError(),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { exit = code; panic(exitPanic{}) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		vars,
	)
	if err != nil {
		return err
	}
	var kctx *kong.Context
	func() {
		defer func() {
			if p := recover(); p != nil {
				if _, ok := p.(exitPanic); !ok {
					panic(p)
				}
			}
		}()
		kctx, err = parser.Parse(args)
	}()
	if exit >= 0 {
		if exit == 0 {
			return nil
		}
		return errors.New("invalid command line")
	}
	if err != nil {
		parser.Errorf("%s", err)
		return err
	}
	return kctx.Run(&env{ctx: ctx, stdout: stdout, stderr: stderr, g: &c.Globals})
}

type exitPanic struct{}

type versionCmd struct{}

func (versionCmd) Run(e *env) error {
	fmt.Fprintln(e.stdout, "lasso", version)
	return nil
}

type migrateCmd struct{}

func (migrateCmd) Run(e *env) error {
	a, err := e.open(e.config())
	if err != nil {
		return err
	}
	defer a.Close()
	fmt.Fprintf(e.stdout, "database migrated (%s)\n", a.DB.Dialect())
	return nil
}

type serveCmd struct {
	HTTPAddr                string   `name:"http-addr" env:"LASSO_HTTP_ADDR" default:"127.0.0.1:8080" help:"HTTP listen address (API, dashboard, tracking)."`
	SMTPAddr                string   `name:"smtp-addr" env:"LASSO_SMTP_ADDR" default:"127.0.0.1:2587" help:"SMTP submission listen address."`
	PublicURL               string   `name:"public-url" env:"LASSO_PUBLIC_URL" help:"Base URL for links that recipients and clients follow (default http://<http-addr>)."`
	SMTPRelay               string   `name:"smtp-relay" env:"LASSO_SMTP_RELAY" help:"Smarthost for outbound mail, e.g. smtp://user:pass@host:587."`
	Outbound                string   `name:"outbound" env:"LASSO_OUTBOUND" enum:",relay,mx,capture" default:"" help:"Outbound path: relay, mx (direct delivery) or capture (local mailbox). Default: relay with --smtp-relay, capture otherwise."`
	Hostname                string   `name:"hostname" env:"LASSO_HOSTNAME" help:"Our FQDN for SMTP EHLO (default: the public URL's host)."`
	BounceAddr              string   `name:"bounce-addr" env:"LASSO_BOUNCE_ADDR" default:"127.0.0.1:2525" help:"SMTP listener for bounces and complaints at the return path (production: :25; \"off\" disables)."`
	SMTPTLSCert             string   `name:"smtp-tls-cert" env:"LASSO_SMTP_TLS_CERT" help:"PEM certificate for SMTP STARTTLS (default: self-signed, generated into the data dir)."`
	SMTPTLSKey              string   `name:"smtp-tls-key" env:"LASSO_SMTP_TLS_KEY" help:"PEM key for --smtp-tls-cert."`
	DNSServer               string   `name:"dns-server" hidden:"" help:"DNS server (host:port) for domain verification (tests)."`
	SendConcurrency         int      `name:"send-concurrency" env:"LASSO_SEND_CONCURRENCY" default:"10" help:"Emails delivered at once per node."`
	BlobStore               string   `name:"blob-store" env:"LASSO_BLOB_STORE" help:"Where uploaded images live: empty for the data dir, or s3://ACCESS:SECRET@host[:port]/bucket[/prefix]?region=…&tls=… (prefer the env variable: flags show in ps)."`
	RateLimit               int      `name:"rate-limit" env:"LASSO_RATE_LIMIT" default:"10" help:"API requests per second per team (0: no limit)."`
	SuppressionRemovalLimit int      `name:"suppression-removal-limit" env:"LASSO_SUPPRESSION_REMOVAL_LIMIT" default:"100" help:"Suppression removals per team per rolling 30 days."`
	DedicatedIPs            []string `name:"dedicated-ip" env:"LASSO_DEDICATED_IPS" help:"Outbound IPs listed by GET /dedicated-sending-ips (repeat or comma-separate)."`
	WebhookAllowPrivate     bool     `name:"webhook-allow-private" env:"LASSO_WEBHOOK_ALLOW_PRIVATE" help:"Let webhooks reach loopback and private addresses (local development). By default only public addresses are allowed: a team member could otherwise read internal services through the delivery log."`
}

func (s serveCmd) Run(e *env) error {
	cfg := e.config()
	cfg.HTTPAddr, cfg.SMTPAddr, cfg.PublicURL, cfg.SMTPRelay = s.HTTPAddr, s.SMTPAddr, s.PublicURL, s.SMTPRelay
	cfg.RateLimit, cfg.SuppressionRemovalLimit, cfg.DedicatedIPs = s.RateLimit, s.SuppressionRemovalLimit, s.DedicatedIPs
	cfg.Outbound, cfg.Hostname = s.Outbound, s.Hostname
	cfg.BounceAddr, cfg.SMTPTLSCert, cfg.SMTPTLSKey, cfg.DNSServer = s.BounceAddr, s.SMTPTLSCert, s.SMTPTLSKey, s.DNSServer
	cfg.BlobStore, cfg.SendConcurrency, cfg.WebhookAllowPrivate = s.BlobStore, s.SendConcurrency, s.WebhookAllowPrivate
	if s.RateLimit == 0 {
		cfg.RateLimit = -1 // 0 on the command line: no limit
	}
	log := e.logger()
	a, err := app.Open(e.ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	if a.Capture != nil {
		fmt.Fprintf(e.stderr, "No --smtp-relay: outgoing mail is kept in the local mailbox %s (see: lasso mailbox list).\n", a.Capture.Dir())
	}
	keys, err := a.Accounts.ListKeys(e.ctx, "")
	if err == nil && len(keys) == 0 {
		fmt.Fprintf(e.stderr, "\nNo API key yet. Create one with:\n  lasso keys create --team \"My team\" --data-dir %s\n\n", e.g.DataDir)
	}
	return a.Serve(e.ctx)
}

type keysCmd struct {
	Create keysCreateCmd `cmd:"" help:"Create an API key (and the team if absent); prints only the key."`
	List   keysListCmd   `cmd:"" help:"List API keys."`
	Revoke keysRevokeCmd `cmd:"" help:"Revoke an API key by id or prefix."`
}

type keysCreateCmd struct {
	Team string `required:"" help:"Team name (created if absent)."`
	Name string `help:"Label for the key."`
}

func (k keysCreateCmd) Run(e *env) error {
	a, err := e.open(e.config())
	if err != nil {
		return err
	}
	defer a.Close()
	t, err := a.Accounts.EnsureTeam(e.ctx, k.Team)
	if err != nil {
		return err
	}
	secret, _, err := a.Accounts.CreateKey(e.ctx, t.ID, k.Name)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, secret)
	return nil
}

type keysListCmd struct {
	Team string `help:"Only this team's keys."`
}

func (k keysListCmd) Run(e *env) error {
	a, err := e.open(e.config())
	if err != nil {
		return err
	}
	defer a.Close()
	teamID := ""
	if k.Team != "" {
		t, err := a.Accounts.TeamByName(e.ctx, k.Team)
		if err != nil {
			return err
		}
		teamID = t.ID
	}
	keys, err := a.Accounts.ListKeys(e.ctx, teamID)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTEAM\tNAME\tPREFIX\tCREATED\tLAST USED\tSTATUS")
	for _, key := range keys {
		status := "active"
		if key.RevokedAt != nil {
			status = "revoked"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s…\t%s\t%s\t%s\n", key.ID, key.TeamName, key.Name, key.Prefix,
			key.CreatedAt.Format(time.RFC3339), fmtTime(key.LastUsedAt), status)
	}
	return tw.Flush()
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}

type keysRevokeCmd struct {
	Key string `arg:"" help:"Key id or prefix (as shown by keys list)."`
}

func (k keysRevokeCmd) Run(e *env) error {
	a, err := e.open(e.config())
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.Accounts.RevokeKey(e.ctx, strings.TrimSuffix(k.Key, "…")); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "revoked")
	return nil
}

type listsCmd struct {
	Create listsCreateCmd `cmd:"" help:"Create a mailing list; prints only its id."`
	List   listsListCmd   `cmd:"" help:"List a team's mailing lists."`
}

type listsCreateCmd struct {
	Team        string `required:"" help:"Team name."`
	Name        string `required:"" help:"List name."`
	Description string `help:"List description."`
	Public      bool   `help:"Show the list on the public preferences page."`
}

func (l listsCreateCmd) Run(e *env) error {
	a, t, err := e.openTeam(l.Team)
	if err != nil {
		return err
	}
	defer a.Close()
	list, err := a.Contacts.CreateList(e.ctx, t.ID, l.Name, l.Description, l.Public)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, list.ID)
	return nil
}

type listsListCmd struct {
	Team string `required:"" help:"Team name."`
}

func (l listsListCmd) Run(e *env) error {
	a, t, err := e.openTeam(l.Team)
	if err != nil {
		return err
	}
	defer a.Close()
	lists, err := a.Contacts.Lists(e.ctx, t.ID)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tPUBLIC\tDESCRIPTION")
	for _, l := range lists {
		desc := ""
		if l.Description != nil {
			desc = *l.Description
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\n", l.ID, l.Name, l.IsPublic, desc)
	}
	return tw.Flush()
}

type domainsCmd struct {
	Add domainsAddCmd `cmd:"" help:"Register a sending domain and print the DNS records to publish."`
}

type domainsAddCmd struct {
	Team      string `required:"" help:"Team name."`
	Domain    string `required:"" help:"Domain to send from, e.g. example.com."`
	Verified  bool   `help:"Mark verified without DNS checks (local development and tests)."`
	PublicURL string `name:"public-url" env:"LASSO_PUBLIC_URL" help:"Public URL of this Lasso (its host receives bounces)."`
}

func (d domainsAddCmd) Run(e *env) error {
	cfg := e.config()
	cfg.PublicURL = d.PublicURL
	a, err := e.open(cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	t, err := a.Accounts.TeamByName(e.ctx, d.Team)
	if err != nil {
		return err
	}
	dom, err := a.Senders.Add(e.ctx, t.ID, d.Domain, d.Verified)
	if err != nil {
		return err
	}
	recs, err := a.Senders.Records(dom)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Domain %s added (%s). Publish these DNS records:\n\n", dom.Domain, map[bool]string{true: "verified", false: "not verified yet"}[dom.Verified])
	for _, r := range recs {
		fmt.Fprintf(e.stdout, "%s\n  %s %s\n  %s\n\n", r.Purpose, r.Type, r.Name, r.Value)
	}
	return nil
}

type webhooksCmd struct {
	Set    webhooksSetCmd    `cmd:"" help:"Set the webhook endpoint URL (and events); prints the signing secret."`
	Show   webhooksShowCmd   `cmd:"" help:"Show the endpoint and recent deliveries."`
	Test   webhooksTestCmd   `cmd:"" help:"Send a testing.testEvent to the endpoint."`
	Rotate webhooksRotateCmd `cmd:"" help:"Rotate the signing secret; prints the new one."`
}

type webhooksSetCmd struct {
	Team   string   `required:"" help:"Team name."`
	URL    string   `name:"url" required:"" help:"Endpoint URL (http or https)."`
	Events []string `help:"Events to send (comma-separated; default all 17)."`
}

func (w webhooksSetCmd) Run(e *env) error {
	a, t, err := e.openTeam(w.Team)
	if err != nil {
		return err
	}
	defer a.Close()
	ep, err := a.Webhooks.Set(e.ctx, t.ID, w.URL, w.Events)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, ep.Secret)
	return nil
}

type webhooksShowCmd struct {
	Team string `required:"" help:"Team name."`
}

func (w webhooksShowCmd) Run(e *env) error {
	a, t, err := e.openTeam(w.Team)
	if err != nil {
		return err
	}
	defer a.Close()
	ep, err := a.Webhooks.Get(e.ctx, a.DB, t.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "url: %s\nenabled: %v\nevents: %s\n\n", ep.URL, ep.Enabled, strings.Join(ep.Events, ", "))
	msgs, err := a.Webhooks.Messages(e.ctx, t.ID, 20)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEVENT\tSTATUS\tATTEMPTS\tLAST CODE\tCREATED")
	for _, m := range msgs {
		code := "-"
		if m.LastStatusCode != nil {
			code = fmt.Sprint(*m.LastStatusCode)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", m.ID, m.Event, m.Status, m.Attempts, code, m.CreatedAt.Format(time.RFC3339))
	}
	return tw.Flush()
}

type webhooksTestCmd struct {
	Team string `required:"" help:"Team name."`
}

func (w webhooksTestCmd) Run(e *env) error {
	a, t, err := e.openTeam(w.Team)
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.Webhooks.SendTest(e.ctx, t.ID); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "queued testing.testEvent (delivered by the running server)")
	return nil
}

type webhooksRotateCmd struct {
	Team string `required:"" help:"Team name."`
}

func (w webhooksRotateCmd) Run(e *env) error {
	a, t, err := e.openTeam(w.Team)
	if err != nil {
		return err
	}
	defer a.Close()
	secret, err := a.Webhooks.RotateSecret(e.ctx, t.ID)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, secret)
	return nil
}

type workflowsCmd struct {
	List   workflowsListCmd   `cmd:"" help:"List a team's workflows: id, name, status, queued contacts."`
	Start  workflowsStartCmd  `cmd:"" help:"Start a workflow (Draft or paused → Sending; the graph must be runnable)."`
	Pause  workflowsPauseCmd  `cmd:"" help:"Pause a sending workflow: queued contacts wait; with --queueing new contacts still enter."`
	Resume workflowsResumeCmd `cmd:"" help:"Resume a paused workflow (→ Sending)."`
	Runs   workflowsRunsCmd   `cmd:"" help:"List a workflow's runs, newest first: id, contact, status, current node, timer end."`
	Run    workflowsRunCmd    `cmd:"" help:"Show one run and the history of the nodes it went through."`
}

// isoMS formats a time as the API does (ISO 8601, UTC, milliseconds).
func isoMS(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

type workflowsListCmd struct {
	Team string `required:"" help:"Team name."`
}

func (c workflowsListCmd) Run(e *env) error {
	a, t, err := e.openTeam(c.Team)
	if err != nil {
		return err
	}
	defer a.Close()
	queued, err := a.Workflows.QueuedCounts(e.ctx, t.ID)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tQUEUED")
	p := content.Page{PerPage: 50}
	for {
		l, err := a.Workflows.List(e.ctx, t.ID, p)
		if err != nil {
			return err
		}
		for _, w := range l.Items {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", w.ID, w.Name, w.Status, queued[w.ID])
		}
		if l.NextCursor == "" {
			break
		}
		p.Cursor = l.NextCursor
	}
	return tw.Flush()
}

// setWorkflowStatus opens the team, applies fn to the workflow and prints
// its new status.
func (e *env) setWorkflowStatus(team string, fn func(a *app.App, teamID string) (*workflows.Workflow, error)) error {
	a, t, err := e.openTeam(team)
	if err != nil {
		return err
	}
	defer a.Close()
	w, err := fn(a, t.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "workflow %s (%s) is now %s\n", w.ID, w.Name, w.Status)
	return nil
}

type workflowsStartCmd struct {
	Team string `required:"" help:"Team name."`
	ID   string `name:"id" required:"" help:"Workflow id."`
}

func (c workflowsStartCmd) Run(e *env) error {
	return e.setWorkflowStatus(c.Team, func(a *app.App, teamID string) (*workflows.Workflow, error) {
		return a.Workflows.SetStatus(e.ctx, teamID, c.ID, workflows.StatusSending)
	})
}

type workflowsPauseCmd struct {
	Team     string `required:"" help:"Team name."`
	ID       string `name:"id" required:"" help:"Workflow id."`
	Queueing bool   `help:"Keep admitting new contacts while paused (PausedAndQueueing)."`
}

func (c workflowsPauseCmd) Run(e *env) error {
	status := workflows.StatusPaused
	if c.Queueing {
		status = workflows.StatusPausedAndQueueing
	}
	return e.setWorkflowStatus(c.Team, func(a *app.App, teamID string) (*workflows.Workflow, error) {
		return a.Workflows.SetStatus(e.ctx, teamID, c.ID, status)
	})
}

type workflowsResumeCmd struct {
	Team string `required:"" help:"Team name."`
	ID   string `name:"id" required:"" help:"Workflow id."`
}

func (c workflowsResumeCmd) Run(e *env) error {
	return e.setWorkflowStatus(c.Team, func(a *app.App, teamID string) (*workflows.Workflow, error) {
		return a.Workflows.Resume(e.ctx, teamID, c.ID)
	})
}

type workflowsRunsCmd struct {
	Team   string `required:"" help:"Team name."`
	ID     string `name:"id" required:"" help:"Workflow id."`
	Email  string `help:"Only the runs of the contact with this email."`
	Status string `help:"Only runs with this status: queued, completed, exited or cancelled."`
	Limit  int    `default:"100" help:"Most runs to print (0: all)."`
}

// nodeLabel is a node id with its type when the graph still has the node.
func nodeLabel(w *workflows.Workflow, id string) string {
	if w != nil {
		if n := w.Node(id); n != nil {
			return id + " (" + n.Type + ")"
		}
	}
	return id
}

func (c workflowsRunsCmd) Run(e *env) error {
	a, t, err := e.openTeam(c.Team)
	if err != nil {
		return err
	}
	defer a.Close()
	w, err := a.Workflows.Get(e.ctx, t.ID, c.ID)
	if err != nil {
		return err
	}
	f := workflows.RunFilter{Email: c.Email, Status: c.Status}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCONTACT\tSTATUS\tNODE\tDUE")
	p := content.Page{PerPage: 50}
	shown, total := 0, 0
	for {
		l, err := a.Workflows.ListRuns(e.ctx, t.ID, c.ID, f, p)
		if err != nil {
			return err
		}
		total = l.Total
		for _, r := range l.Items {
			if c.Limit > 0 && shown == c.Limit {
				break
			}
			contact := r.ContactEmail
			if contact == "" {
				contact = r.ContactID
			}
			due := "-"
			if r.DueAt != nil {
				due = isoMS(*r.DueAt)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, contact, r.Status, nodeLabel(w, r.NodeID), due)
			shown++
		}
		if l.NextCursor == "" || (c.Limit > 0 && shown == c.Limit) {
			break
		}
		p.Cursor = l.NextCursor
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if total == 0 {
		fmt.Fprintln(e.stdout, "(no runs)")
	} else if shown < total {
		fmt.Fprintf(e.stdout, "(%d of %d runs; --limit 0 shows all)\n", shown, total)
	}
	return nil
}

type workflowsRunCmd struct {
	Team  string `required:"" help:"Team name."`
	RunID string `name:"run" required:"" help:"Run id (from workflows runs)."`
}

func (c workflowsRunCmd) Run(e *env) error {
	a, t, err := e.openTeam(c.Team)
	if err != nil {
		return err
	}
	defer a.Close()
	r, err := a.Workflows.GetRun(e.ctx, t.ID, c.RunID)
	if err != nil {
		return err
	}
	w, err := a.Workflows.Get(e.ctx, t.ID, r.WorkflowID)
	if err != nil && !errors.Is(err, apperr.NotFound) {
		return err
	}
	wfLabel := r.WorkflowID + " (deleted)"
	if w != nil {
		wfLabel = r.WorkflowID + " (" + w.Name + ")"
	}
	contact := r.ContactID
	if r.ContactEmail != "" {
		contact = r.ContactEmail + " (" + r.ContactID + ")"
	}
	due, event := "-", "-"
	if r.DueAt != nil {
		due = isoMS(*r.DueAt)
	}
	if r.EventID != "" {
		event = r.EventID
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, kv := range [][2]string{{"run", r.ID}, {"workflow", wfLabel}, {"contact", contact}, {"status", r.Status},
		{"node", nodeLabel(w, r.NodeID)}, {"due", due}, {"event", event}, {"created", isoMS(r.CreatedAt)}, {"updated", isoMS(r.UpdatedAt)}} {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], kv[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout)
	tw = tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tNODE\tTYPE\tRESULT\tDETAIL")
	for _, s := range r.History {
		typ := s.Type
		if typ == "" {
			typ = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", isoMS(time.UnixMilli(s.At)), s.NodeID, typ, s.Result, s.Detail)
	}
	return tw.Flush()
}
