-- +goose Up
-- Dashboard (issue 6): people who log in, their sessions, invitations, the
-- one-time setup token, login throttling, CSV imports and domain checks.

-- A user belongs to one team. Passwords are argon2id (PHC string).
CREATE TABLE users (
    id             TEXT PRIMARY KEY,
    team_id        TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    email          TEXT NOT NULL UNIQUE,
    name           TEXT NOT NULL DEFAULT '',
    password_hash  TEXT NOT NULL,
    role           TEXT NOT NULL,
    created_at     INTEGER NOT NULL
);
CREATE INDEX users_team ON users (team_id, created_at);

-- Sessions live in the database so that any node serves them. The cookie
-- holds a random token; only its SHA-256 is stored.
CREATE TABLE sessions (
    token_hash    TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    csrf_token    TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    last_seen_at  INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);

-- Invitations to join a team; the link carries a token stored hashed.
CREATE TABLE invites (
    token_hash   TEXT PRIMARY KEY,
    team_id      TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    email        TEXT NOT NULL,
    role         TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    accepted_at  INTEGER
);
CREATE INDEX invites_team ON invites (team_id, created_at);

-- One-time setup tokens, valid while no user exists.
CREATE TABLE setup_tokens (
    token_hash  TEXT PRIMARY KEY,
    created_at  INTEGER NOT NULL
);

-- Failed logins, counted per key (email or client address) over a window.
CREATE TABLE login_failures (
    key         TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX login_failures_key ON login_failures (key, created_at);
CREATE INDEX login_failures_created ON login_failures (created_at);

-- The last DNS check of each sending domain (JSON list of record results).
CREATE TABLE domain_checks (
    domain_id   TEXT PRIMARY KEY REFERENCES sending_domains(id) ON DELETE CASCADE,
    results     TEXT NOT NULL,
    checked_at  INTEGER NOT NULL
);

-- CSV imports: the uploaded file lives in the data dir; counters are
-- updated as the background job runs.
CREATE TABLE csv_imports (
    id            TEXT PRIMARY KEY,
    team_id       TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    user_id       TEXT NOT NULL,
    filename      TEXT NOT NULL,
    path          TEXT NOT NULL,
    size          INTEGER NOT NULL,
    status        TEXT NOT NULL,
    mapping       TEXT NOT NULL DEFAULT '{}',
    total_rows    INTEGER NOT NULL DEFAULT 0,
    processed     INTEGER NOT NULL DEFAULT 0,
    created       INTEGER NOT NULL DEFAULT 0,
    updated       INTEGER NOT NULL DEFAULT 0,
    skipped       INTEGER NOT NULL DEFAULT 0,
    error         TEXT NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);
CREATE INDEX csv_imports_team ON csv_imports (team_id, created_at);

-- Keyset pagination of the contacts table (newest first) stays an index
-- range scan with ties broken by id.
CREATE INDEX contacts_team_created_id ON contacts (team_id, created_at, id);

-- +goose Down
DROP INDEX contacts_team_created_id;
DROP TABLE csv_imports;
DROP TABLE domain_checks;
DROP TABLE login_failures;
DROP TABLE setup_tokens;
DROP TABLE invites;
DROP TABLE sessions;
DROP TABLE users;
