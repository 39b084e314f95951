package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/lasso-mail/lasso/internal/queue"
)

// HousekeepingArgs is the hourly job that deletes what has expired:
// webhook history past its 30 days, idempotency keys past their window,
// uploads never completed, expired dashboard sessions. Kind "housekeeping".
type HousekeepingArgs struct{}

// Kind implements queue.Args.
func (HousekeepingArgs) Kind() string { return "housekeeping" }

// pruneTask deletes one kind of expired rows and says how many.
type pruneTask struct {
	name string
	run  func(context.Context) (int64, error)
}

// housekeepingWorker runs every task, even after one fails, and logs what
// each deleted.
type housekeepingWorker struct {
	queue.WorkerDefaults[HousekeepingArgs]
	log   *slog.Logger
	tasks []pruneTask
}

// Work implements queue.Worker.
func (w *housekeepingWorker) Work(ctx context.Context, _ *queue.Job[HousekeepingArgs]) error {
	var errs []error
	for _, t := range w.tasks {
		n, err := t.run(ctx)
		if n > 0 {
			w.log.Info("housekeeping", "task", t.name, "deleted", n)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.name, err))
		}
	}
	return errors.Join(errs...)
}
