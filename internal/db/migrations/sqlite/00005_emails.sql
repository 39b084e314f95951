-- +goose Up
-- One row per recipient of every email Lasso sends (its id is the webhook
-- email.id and travels in the VERP return path and X-Lasso-Send-ID).
CREATE TABLE sends (
    id                TEXT PRIMARY KEY,
    team_id           TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    contact_id        TEXT,
    recipient         TEXT NOT NULL,
    source_type       TEXT NOT NULL,
    source_id         TEXT NOT NULL,
    source_name       TEXT NOT NULL,
    email_message_id  TEXT NOT NULL DEFAULT '',
    subject           TEXT NOT NULL DEFAULT '',
    payload           TEXT NOT NULL,
    status            TEXT NOT NULL,
    attempts          INTEGER NOT NULL DEFAULT 0,
    message_id        TEXT NOT NULL DEFAULT '',
    last_code         INTEGER,
    last_enhanced     TEXT,
    last_message      TEXT,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    sent_at           INTEGER,
    opened_at         INTEGER,
    clicked_at        INTEGER
);
CREATE INDEX sends_team_created ON sends (team_id, created_at);
CREATE INDEX sends_contact ON sends (contact_id, created_at);
CREATE INDEX sends_source ON sends (team_id, source_type, source_id);

-- The status history of each send.
CREATE TABLE send_events (
    id          TEXT PRIMARY KEY,
    send_id     TEXT NOT NULL REFERENCES sends(id) ON DELETE CASCADE,
    status      TEXT NOT NULL,
    detail      TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL
);
CREATE INDEX send_events_send ON send_events (send_id, created_at);

-- +goose Down
DROP TABLE send_events;
DROP TABLE sends;
