-- +goose Up
-- Workflow engine (issue 5): what a run needs beyond its node and status.
-- run_key makes starting a run idempotent: the contact id for a workflow a
-- contact may enter once, contact id and event id for a re-eligible one, so
-- a trigger job that runs twice cannot start a run twice. event_id is the
-- triggering event ({event.x} of the run's emails). due_at is when the timer
-- the run waits on ends (unix ms, the app's clock). seq numbers the run's
-- step jobs: only the job carrying the current seq may act (a job that runs
-- twice is a no-op the second time). history is a JSON array of the nodes
-- the run went through ({nodeId, type, at, result, detail}).
ALTER TABLE workflow_runs ADD COLUMN run_key TEXT;
ALTER TABLE workflow_runs ADD COLUMN event_id TEXT;
ALTER TABLE workflow_runs ADD COLUMN due_at BIGINT;
ALTER TABLE workflow_runs ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE workflow_runs ADD COLUMN history TEXT NOT NULL DEFAULT '[]';
CREATE UNIQUE INDEX workflow_runs_key ON workflow_runs (workflow_id, run_key);
CREATE INDEX workflow_runs_contact ON workflow_runs (workflow_id, contact_id);

-- +goose Down
DROP INDEX workflow_runs_contact;
DROP INDEX workflow_runs_key;
ALTER TABLE workflow_runs DROP COLUMN history;
ALTER TABLE workflow_runs DROP COLUMN seq;
ALTER TABLE workflow_runs DROP COLUMN due_at;
ALTER TABLE workflow_runs DROP COLUMN event_id;
ALTER TABLE workflow_runs DROP COLUMN run_key;
