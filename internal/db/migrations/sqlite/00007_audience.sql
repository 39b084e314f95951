-- +goose Up
-- Audience segments (§5.13): a named, saved filter (JSON, §11).
CREATE TABLE audience_segments (
    id           TEXT PRIMARY KEY,
    team_id      TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    description  TEXT,
    filter       TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    UNIQUE (team_id, name)
);
CREATE INDEX audience_segments_team_created ON audience_segments (team_id, created_at);

-- Activity conditions (sent/opened/clicked a campaign, workflow or workflow
-- email) probe sends by (team, source, contact) and by (team, email
-- message, contact).
CREATE INDEX sends_source_contact ON sends (team_id, source_type, source_id, contact_id);
CREATE INDEX sends_message_contact ON sends (team_id, email_message_id, contact_id);

-- +goose Down
DROP INDEX sends_message_contact;
DROP INDEX sends_source_contact;
DROP TABLE audience_segments;
