package app

import (
	"context"

	"github.com/lasso-mail/lasso/internal/events"
	"github.com/lasso-mail/lasso/internal/queue"
)

// eventWorker consumes events_recorded jobs. Workflow triggering plugs in
// here (the automation issue); until then the job completes once the event
// is durably recorded, which it is by the time the job exists.
type eventWorker struct {
	queue.WorkerDefaults[events.RecordedArgs]
}

func (w *eventWorker) Work(ctx context.Context, job *queue.Job[events.RecordedArgs]) error {
	return nil
}
