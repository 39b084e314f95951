-- +goose Up
-- Resuming a workflow gives its queued runs their step jobs in batches,
-- walking them in id order (workflows.Engine.Rearm).
CREATE INDEX workflow_runs_rearm ON workflow_runs (workflow_id, status, id);

-- +goose Down
DROP INDEX workflow_runs_rearm;
