-- +goose Up
CREATE TABLE webhook_endpoints (
    team_id     TEXT PRIMARY KEY REFERENCES teams(id) ON DELETE CASCADE,
    url         TEXT NOT NULL,
    secret      TEXT NOT NULL,
    enabled     BOOLEAN NOT NULL DEFAULT TRUE,
    events      TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

-- One row per webhook message (its id is the stable webhook-id header);
-- attempts record every delivery try. Both are kept 30 days.
CREATE TABLE webhook_messages (
    id               TEXT PRIMARY KEY,
    team_id          TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    event_name       TEXT NOT NULL,
    payload          TEXT NOT NULL,
    status           TEXT NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_status_code INTEGER,
    last_error       TEXT,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);
CREATE INDEX webhook_messages_team ON webhook_messages (team_id, created_at);
CREATE INDEX webhook_messages_created ON webhook_messages (created_at);

CREATE TABLE webhook_attempts (
    id           TEXT PRIMARY KEY,
    message_id   TEXT NOT NULL REFERENCES webhook_messages(id) ON DELETE CASCADE,
    url          TEXT NOT NULL,
    status_code  INTEGER,
    response     TEXT,
    error        TEXT,
    duration_ms  INTEGER NOT NULL,
    created_at   INTEGER NOT NULL
);
CREATE INDEX webhook_attempts_message ON webhook_attempts (message_id, created_at);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_messages;
DROP TABLE webhook_endpoints;
