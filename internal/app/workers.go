package app

import (
	"context"

	"github.com/lasso-mail/lasso/internal/events"
	"github.com/lasso-mail/lasso/internal/queue"
	"github.com/lasso-mail/lasso/internal/workflows"
)

// eventWorker consumes events_recorded jobs: it starts the workflow runs
// the events trigger (idempotently: jobs run at least once).
type eventWorker struct {
	queue.WorkerDefaults[events.RecordedArgs]
	engine *workflows.Engine // set once built, before the queue starts
}

func (w *eventWorker) Work(ctx context.Context, job *queue.Job[events.RecordedArgs]) error {
	if w.engine == nil {
		return nil
	}
	return w.engine.Trigger(ctx, job.Args.Events)
}
