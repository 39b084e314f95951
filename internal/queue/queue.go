// Package queue is the durable job queue: River on both database drivers,
// behind a small API of ours so that the rest of the code never sees which
// driver runs. Jobs are inserted in the caller's transaction (InsertTx), so a
// job exists exactly when the data that caused it was committed.
//
// A package that announces a fact declares its job args (a type with a
// Kind() string method); the package that reacts registers a worker for that
// kind with AddWorker. The app wires them together.
package queue

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/lasso-mail/lasso/internal/db"
)

// Re-exported River types, so that job args and workers import only queue.
type (
	Args                            = river.JobArgs
	Job[T river.JobArgs]            = river.Job[T]
	Worker[T river.JobArgs]         = river.Worker[T]
	WorkerDefaults[T river.JobArgs] = river.WorkerDefaults[T]
	InsertOpts                      = river.InsertOpts
	Workers                         = river.Workers
	UniqueOpts                      = river.UniqueOpts
)

// NewWorkers returns an empty worker registry.
func NewWorkers() *Workers { return river.NewWorkers() }

// AddWorker registers w for the kind of T.
func AddWorker[T river.JobArgs](ws *Workers, w Worker[T]) { river.AddWorker(ws, w) }

// JobSnooze tells the queue to run the job again after d without counting an attempt.
func JobSnooze(d time.Duration) error { return river.JobSnooze(d) }

// JobCancel tells the queue not to retry the job.
func JobCancel(err error) error { return river.JobCancel(err) }

// Config tunes the queue.
type Config struct {
	// MaxWorkers is the number of jobs worked at once per node (default 50).
	MaxWorkers int
	// FetchCooldown and FetchPollInterval bound the delay from insert to
	// work (defaults 10 ms and 100 ms).
	FetchCooldown     time.Duration
	FetchPollInterval time.Duration
	Logger            *slog.Logger
	// Registerer receives job outcome and queue depth metrics (optional).
	Registerer prometheus.Registerer
	// Periodic jobs are inserted every Interval by the elected leader node.
	Periodic []Periodic
	// Queues are extra named queues and their worker counts (jobs choose a
	// queue with InsertOpts.Queue).
	Queues map[string]int
}

// Periodic is a job run on a fixed interval.
type Periodic struct {
	Interval time.Duration
	Args     func() Args
}

// Queue inserts and works jobs.
type Queue struct {
	d        db.DB
	sqlite   *river.Client[*sql.Tx]
	pg       *river.Client[pgx.Tx]
	working  bool
	outcomes *prometheus.CounterVec
	stopSub  func()
	log      *slog.Logger
}

// New builds a queue on d. With workers nil the queue can only insert (as the
// CLI does); Start then does nothing.
func New(d db.DB, workers *Workers, cfg Config) (*Queue, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxWorkers == 0 {
		cfg.MaxWorkers = 50
	}
	if cfg.FetchCooldown == 0 {
		cfg.FetchCooldown = 10 * time.Millisecond
	}
	if cfg.FetchPollInterval == 0 {
		cfg.FetchPollInterval = 100 * time.Millisecond
	}
	rc := &river.Config{
		Logger:            cfg.Logger.With("component", "queue"),
		FetchCooldown:     cfg.FetchCooldown,
		FetchPollInterval: cfg.FetchPollInterval,
		JobTimeout:        5 * time.Minute,
		MaxAttempts:       25,
		// A job still "running" this long after it started belonged to a
		// node that died; another node runs it again (at least once).
		RescueStuckJobsAfter: 15 * time.Minute,
	}
	q := &Queue{d: d, log: cfg.Logger}
	for _, p := range cfg.Periodic {
		args := p.Args
		rc.PeriodicJobs = append(rc.PeriodicJobs, river.NewPeriodicJob(river.PeriodicInterval(p.Interval),
			func() (river.JobArgs, *river.InsertOpts) { return args(), nil }, nil))
	}
	if workers != nil {
		rc.Workers = workers
		rc.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.MaxWorkers}}
		for name, n := range cfg.Queues {
			rc.Queues[name] = river.QueueConfig{MaxWorkers: n}
		}
		q.working = true
	}
	var err error
	switch d := d.(type) {
	case *db.SQLiteDB:
		q.sqlite, err = river.NewClient(riversqlite.New(d.WritePool()), rc)
	case *db.PostgresDB:
		q.pg, err = river.NewClient(riverpgxv5.New(d.Pool()), rc)
	default:
		err = fmt.Errorf("unknown database %T", d)
	}
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	if cfg.Registerer != nil {
		q.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lasso_jobs_total", Help: "Jobs worked, by kind and outcome.",
		}, []string{"kind", "outcome"})
		cfg.Registerer.MustRegister(q.outcomes, &depthCollector{d: d, desc: prometheus.NewDesc(
			"lasso_queue_jobs", "Jobs in the queue by state.", []string{"state"}, nil)})
	}
	return q, nil
}

// Migrate creates or upgrades the queue's tables.
func Migrate(ctx context.Context, d db.DB) error {
	var err error
	switch d := d.(type) {
	case *db.SQLiteDB:
		var m *rivermigrate.Migrator[*sql.Tx]
		if m, err = rivermigrate.New(riversqlite.New(d.WritePool()), nil); err == nil {
			_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
		}
	case *db.PostgresDB:
		var m *rivermigrate.Migrator[pgx.Tx]
		if m, err = rivermigrate.New(riverpgxv5.New(d.Pool()), nil); err == nil {
			_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
		}
	default:
		err = fmt.Errorf("unknown database %T", d)
	}
	if err != nil {
		return fmt.Errorf("migrate queue: %w", err)
	}
	return nil
}

// InsertTx inserts a job in tx; it runs once tx commits. Jobs of concurrent
// transactions that share a group commit are inserted together (one
// multi-row insert per commit; see db.Tx.Collect).
func (q *Queue) InsertTx(ctx context.Context, tx db.Tx, args Args, opts *InsertOpts) error {
	return tx.Collect("queue", river.InsertManyParams{Args: args, InsertOpts: opts}, q.flush)
}

func (q *Queue) flush(ctx context.Context, tx db.Tx, items []any) error {
	params := make([]river.InsertManyParams, len(items))
	for i, it := range items {
		params[i] = it.(river.InsertManyParams)
	}
	// The fast insert returns no rows (we use none) and is cheaper on the
	// SQLite writer; it cannot resolve unique conflicts, so jobs with
	// unique options take the regular path.
	fast := true
	for _, p := range params {
		if o := p.InsertOpts; o != nil && (o.UniqueOpts.ByArgs || o.UniqueOpts.ByPeriod > 0 || o.UniqueOpts.ByQueue || len(o.UniqueOpts.ByState) > 0) {
			fast = false
		}
	}
	var err error
	switch raw := tx.Raw().(type) {
	case *sql.Tx:
		if fast {
			_, err = q.sqlite.InsertManyFastTx(ctx, raw, params)
		} else {
			_, err = q.sqlite.InsertManyTx(ctx, raw, params)
		}
	case pgx.Tx:
		if fast {
			_, err = q.pg.InsertManyFastTx(ctx, raw, params)
		} else {
			_, err = q.pg.InsertManyTx(ctx, raw, params)
		}
	default:
		err = fmt.Errorf("unknown transaction %T", raw)
	}
	if err != nil {
		return fmt.Errorf("insert jobs: %w", err)
	}
	return nil
}

// InsertManyTx inserts several jobs in tx.
func (q *Queue) InsertManyTx(ctx context.Context, tx db.Tx, args []Args) error {
	if len(args) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, len(args))
	for i, a := range args {
		params[i] = river.InsertManyParams{Args: a}
	}
	var err error
	switch raw := tx.Raw().(type) {
	case *sql.Tx:
		_, err = q.sqlite.InsertManyTx(ctx, raw, params)
	case pgx.Tx:
		_, err = q.pg.InsertManyTx(ctx, raw, params)
	default:
		err = fmt.Errorf("unknown transaction %T", raw)
	}
	if err != nil {
		return fmt.Errorf("insert jobs: %w", err)
	}
	return nil
}

// Start starts working jobs (if the queue has workers).
func (q *Queue) Start(ctx context.Context) error {
	if !q.working {
		return nil
	}
	var sub <-chan *river.Event
	if q.sqlite != nil {
		// SQLite runs one node, so a job left "running" can only belong to
		// a process that crashed (kill -9, power loss): run it again now
		// rather than after RescueStuckJobsAfter. Jobs are at-least-once;
		// the send job checks its send's status before delivering.
		if n, err := q.d.Exec(ctx, `UPDATE river_job SET state = 'available' WHERE state = 'running'`); err != nil {
			return fmt.Errorf("rescue jobs: %w", err)
		} else if n > 0 {
			q.log.Warn("rescued jobs left running by a previous process", "jobs", n)
		}
		if q.outcomes != nil {
			sub, q.stopSub = q.sqlite.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled, river.EventKindJobSnoozed)
		}
		if err := q.sqlite.Start(ctx); err != nil {
			return fmt.Errorf("start queue: %w", err)
		}
	} else {
		if q.outcomes != nil {
			sub, q.stopSub = q.pg.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled, river.EventKindJobSnoozed)
		}
		if err := q.pg.Start(ctx); err != nil {
			return fmt.Errorf("start queue: %w", err)
		}
	}
	if sub != nil {
		go func() {
			for ev := range sub {
				if ev.Job != nil {
					q.outcomes.WithLabelValues(ev.Job.Kind, string(ev.Kind)).Inc()
				}
			}
		}()
	}
	return nil
}

// Stop stops fetching jobs and waits for running ones until ctx ends.
func (q *Queue) Stop(ctx context.Context) error {
	if !q.working {
		return nil
	}
	var err error
	if q.sqlite != nil {
		err = q.sqlite.Stop(ctx)
	} else {
		err = q.pg.Stop(ctx)
	}
	if q.stopSub != nil {
		q.stopSub()
		q.stopSub = nil
	}
	return err
}

type depthCollector struct {
	d    db.DB
	desc *prometheus.Desc
}

func (c *depthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *depthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rows, err := c.d.Query(ctx, "SELECT state, count(*) FROM river_job GROUP BY state")
	if err != nil {
		return
	}
	defer rows.Close()
	counts := map[string]int64{"available": 0, "scheduled": 0, "running": 0, "retryable": 0, "discarded": 0}
	for rows.Next() {
		var state string
		var n int64
		if rows.Scan(&state, &n) == nil {
			counts[state] = n
		}
	}
	for state, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), state)
	}
}
