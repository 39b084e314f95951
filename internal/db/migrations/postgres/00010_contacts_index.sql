-- +goose Up
-- contacts_team_created (team_id, created_at) is a prefix of
-- contacts_team_created_id (team_id, created_at, id), which serves every
-- query it served: one index fewer to update on each contact insert.
DROP INDEX contacts_team_created;

-- +goose Down
CREATE INDEX contacts_team_created ON contacts (team_id, created_at);
