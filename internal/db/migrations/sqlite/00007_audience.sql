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

-- Audience filters (package audience, see its BENCH.md) count sets of
-- contact ids read from covering indexes, so that no table row is touched:
--
-- the team's contact ids (the universe of negations, keyset pages);
CREATE INDEX contacts_team_id ON contacts (team_id, id);
-- string properties, case-folded for equals/contains (ASCII A-Z only, the
-- same fold the filter compiler writes, so the expression matches);
CREATE INDEX contact_values_fold ON contact_values (team_id, name, lower(str), contact_id);
-- numbers, booleans and dates (replaces contact_values_num, its prefix);
DROP INDEX contact_values_num;
CREATE INDEX contact_values_num_cover ON contact_values (team_id, name, num, contact_id);
-- activity: who was sent / opened / clicked a campaign or workflow, or a
-- workflow email.
CREATE INDEX sends_audience_source ON sends (team_id, source_type, source_id, contact_id, sent_at, opened_at, clicked_at, status);
CREATE INDEX sends_audience_message ON sends (team_id, email_message_id, contact_id, sent_at, opened_at, clicked_at, status);

-- +goose Down
DROP INDEX sends_audience_message;
DROP INDEX sends_audience_source;
DROP INDEX contact_values_num_cover;
CREATE INDEX contact_values_num ON contact_values (team_id, name, num);
DROP INDEX contact_values_fold;
DROP INDEX contacts_team_id;
DROP TABLE audience_segments;
