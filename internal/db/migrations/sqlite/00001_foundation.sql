-- +goose Up
CREATE TABLE teams (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL
);

CREATE TABLE api_keys (
    id            TEXT PRIMARY KEY,
    team_id       TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    key_hash      TEXT NOT NULL UNIQUE,
    key_prefix    TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    last_used_at  INTEGER,
    revoked_at    INTEGER
);
CREATE INDEX api_keys_team ON api_keys (team_id);

CREATE TABLE contacts (
    id             TEXT PRIMARY KEY,
    team_id        TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    email          TEXT NOT NULL,
    user_id        TEXT,
    first_name     TEXT,
    last_name      TEXT,
    notes          TEXT,
    source         TEXT NOT NULL,
    subscribed     BOOLEAN NOT NULL,
    user_group     TEXT NOT NULL DEFAULT '',
    opt_in_status  TEXT,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    UNIQUE (team_id, email),
    UNIQUE (team_id, user_id)
);
CREATE INDEX contacts_team_created ON contacts (team_id, created_at);

CREATE TABLE contact_properties (
    team_id     TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    label       TEXT NOT NULL,
    type        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (team_id, name)
);

-- Custom property values, one row per contact and property, typed: strings
-- in str; numbers, booleans (0/1) and dates (unix ms) in num. Indexed per
-- property so that audience filters compile to index range scans.
CREATE TABLE contact_values (
    contact_id  TEXT NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
    team_id     TEXT NOT NULL,
    name        TEXT NOT NULL,
    str         TEXT,
    num         REAL,
    PRIMARY KEY (contact_id, name)
);
CREATE INDEX contact_values_str ON contact_values (team_id, name, str);
CREATE INDEX contact_values_num ON contact_values (team_id, name, num);

CREATE TABLE mailing_lists (
    id           TEXT PRIMARY KEY,
    team_id      TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    description  TEXT,
    is_public    BOOLEAN NOT NULL DEFAULT FALSE,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX mailing_lists_team ON mailing_lists (team_id, created_at);

CREATE TABLE contact_lists (
    contact_id  TEXT NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
    list_id     TEXT NOT NULL REFERENCES mailing_lists(id) ON DELETE CASCADE,
    team_id     TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (contact_id, list_id)
);
CREATE INDEX contact_lists_list ON contact_lists (list_id);

CREATE TABLE suppressions (
    team_id     TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    email       TEXT NOT NULL,
    reason      TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (team_id, email)
);

CREATE TABLE suppression_removals (
    id          TEXT PRIMARY KEY,
    team_id     TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    email       TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX suppression_removals_team ON suppression_removals (team_id, created_at);

CREATE TABLE events (
    id          TEXT PRIMARY KEY,
    team_id     TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    contact_id  TEXT NOT NULL,
    name        TEXT NOT NULL,
    properties  TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX events_team_name ON events (team_id, name, created_at);
CREATE INDEX events_contact ON events (contact_id, created_at);

CREATE TABLE idempotency_keys (
    team_id     TEXT NOT NULL,
    scope       TEXT NOT NULL,
    key         TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (team_id, scope, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

CREATE TABLE event_patterns (
    id          TEXT PRIMARY KEY,
    team_id     TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    UNIQUE (team_id, name)
);

CREATE TABLE event_pattern_properties (
    pattern_id  TEXT NOT NULL REFERENCES event_patterns(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    type        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (pattern_id, name)
);

CREATE TABLE sending_domains (
    id            TEXT PRIMARY KEY,
    team_id       TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    domain        TEXT NOT NULL UNIQUE,
    verified      BOOLEAN NOT NULL DEFAULT FALSE,
    verified_at   INTEGER,
    dkim_selector TEXT NOT NULL,
    dkim_rsa_key  TEXT NOT NULL,
    dkim_ed_key   TEXT NOT NULL,
    created_at    INTEGER NOT NULL
);
CREATE INDEX sending_domains_team ON sending_domains (team_id);

-- +goose Down
DROP TABLE sending_domains;
DROP TABLE event_pattern_properties;
DROP TABLE event_patterns;
DROP TABLE idempotency_keys;
DROP TABLE events;
DROP TABLE suppression_removals;
DROP TABLE suppressions;
DROP TABLE contact_lists;
DROP TABLE mailing_lists;
DROP TABLE contact_values;
DROP TABLE contact_properties;
DROP TABLE contacts;
DROP TABLE api_keys;
DROP TABLE teams;
