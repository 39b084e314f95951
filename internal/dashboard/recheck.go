package dashboard

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/queue"
)

// Periodic re-check of sending domains: DNS changes (a record published
// late, or removed) are noticed without anyone pressing Verify.
const (
	// RecheckInterval is how often the re-check job runs; each run checks
	// only the domains that are due.
	RecheckInterval = time.Minute
	// RecheckUnverified and RecheckVerified are how long after its last
	// check a domain is checked again.
	RecheckUnverified = 10 * time.Minute
	RecheckVerified   = 24 * time.Hour
	// recheckBatch bounds the domains checked by one run (the oldest
	// checks first; the rest wait for the next run).
	recheckBatch = 100
)

// RecheckArgs is the periodic job that re-verifies due domains. Kind
// "domain_recheck".
type RecheckArgs struct{}

// Kind implements queue.Args.
func (RecheckArgs) Kind() string { return "domain_recheck" }

// RecheckWorker runs RecheckDomains. Dashboard is set once the dashboard
// exists (the worker is registered before the queue it is built from).
type RecheckWorker struct {
	queue.WorkerDefaults[RecheckArgs]
	Dashboard *Dashboard
}

// Work implements queue.Worker.
func (w *RecheckWorker) Work(ctx context.Context, _ *queue.Job[RecheckArgs]) error {
	if w.Dashboard == nil {
		return nil
	}
	_, err := w.Dashboard.RecheckDomains(ctx)
	return err
}

// RecheckDomains re-verifies, with the same lookups and rules as the Verify
// button, every unverified domain last checked RecheckUnverified ago or
// more (or never) and every verified one last checked RecheckVerified ago
// or more. It returns the number of domains checked.
func (d *Dashboard) RecheckDomains(ctx context.Context) (int, error) {
	now := d.now()
	rows, err := d.deps.DB.Query(ctx, `SELECT sd.id, sd.team_id FROM sending_domains sd
		LEFT JOIN domain_checks dc ON dc.domain_id = sd.id
		WHERE dc.checked_at IS NULL
		   OR (NOT sd.verified AND dc.checked_at <= $1)
		   OR (sd.verified AND dc.checked_at <= $2)
		ORDER BY COALESCE(dc.checked_at, 0), sd.id LIMIT $3`,
		now.Add(-RecheckUnverified).UnixMilli(), now.Add(-RecheckVerified).UnixMilli(), recheckBatch)
	if err != nil {
		return 0, err
	}
	type due struct{ id, team string }
	var todo []due
	for rows.Next() {
		var x due
		if err := rows.Scan(&x.id, &x.team); err != nil {
			rows.Close()
			return 0, err
		}
		todo = append(todo, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, x := range todo {
		if ctx.Err() != nil {
			break
		}
		dom, err := d.domainByID(ctx, x.team, x.id)
		if errors.Is(err, apperr.NotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		recs, err := d.deps.Senders.Records(dom)
		if err == nil {
			_, _, err = d.verifyDomain(ctx, x.team, dom.ID, recs)
		}
		if err != nil && !errors.Is(err, apperr.NotFound) {
			d.log.ErrorContext(ctx, "domain re-check", slog.String("domain", dom.Domain), slog.String("error", err.Error()))
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
