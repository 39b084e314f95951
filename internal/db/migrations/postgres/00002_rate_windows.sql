-- +goose Up
-- Per-team request counters shared by every node. UNLOGGED: losing them in a
-- crash only resets one second of counting, and they skip the WAL.
CREATE UNLOGGED TABLE rate_windows (
    team_id       TEXT NOT NULL,
    window_start  BIGINT NOT NULL,
    count         BIGINT NOT NULL,
    PRIMARY KEY (team_id, window_start)
);

-- +goose Down
DROP TABLE rate_windows;
