-- +goose Up
-- Workflows (issue 5, spec §5.15–§5.16, §10): a workflow and its node graph.
-- Edges live on the parent: next_node_ids is the ordered JSON array of child
-- node ids (branch children left to right). A node may have several parents
-- (reroute), never a cycle; the root is the workflow's single trigger.
CREATE TABLE workflows (
    id               TEXT PRIMARY KEY,
    team_id          TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name             TEXT NOT NULL,
    description      TEXT,
    status           TEXT NOT NULL,
    mailing_list_id  TEXT,
    root_node_id     TEXT NOT NULL,
    revision_id      TEXT,
    deleted_at       BIGINT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);
CREATE INDEX workflows_team_created ON workflows (team_id, created_at);

-- One row per node; payload is the JSON of the type's settings
-- (workflows.Payload).
CREATE TABLE workflow_nodes (
    id             TEXT PRIMARY KEY,
    workflow_id    TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
    team_id        TEXT NOT NULL,
    type           TEXT NOT NULL,
    next_node_ids  TEXT NOT NULL,
    payload        TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);
CREATE INDEX workflow_nodes_workflow ON workflow_nodes (workflow_id);

-- A contact's run through a workflow. status 'queued' means the contact is
-- in the workflow, at node_id (waiting on a timer or about to run it); the
-- API's queuedContactCount counts these. Other statuses: 'completed',
-- 'exited', 'cancelled' (deleted workflow, discarded by an edit). The engine
-- owns the rest of the run's columns.
CREATE TABLE workflow_runs (
    id           TEXT PRIMARY KEY,
    team_id      TEXT NOT NULL,
    workflow_id  TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
    contact_id   TEXT NOT NULL,
    node_id      TEXT NOT NULL,
    status       TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX workflow_runs_workflow_status ON workflow_runs (workflow_id, status, node_id);

-- +goose Down
DROP TABLE workflow_runs;
DROP TABLE workflow_nodes;
DROP TABLE workflows;
