-- +goose Up
-- SQLite runs one node, which counts in memory; the table keeps the two
-- dialects' migration numbers in step.
CREATE TABLE rate_windows (
    team_id       TEXT NOT NULL,
    window_start  INTEGER NOT NULL,
    count         INTEGER NOT NULL,
    PRIMARY KEY (team_id, window_start)
);

-- +goose Down
DROP TABLE rate_windows;
