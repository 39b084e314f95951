-- +goose Up
-- Email content (issue 3): groups, themes, components, transactional emails,
-- their email messages, uploads, and the per-team content quotas.

-- Campaign and transactional groups; one reserved default ("Unsorted") per
-- team and kind.
CREATE TABLE content_groups (
    id           TEXT PRIMARY KEY,
    team_id      TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    kind         TEXT NOT NULL,
    name         TEXT NOT NULL,
    description  TEXT NOT NULL DEFAULT '',
    is_default   BOOLEAN NOT NULL DEFAULT FALSE,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX content_groups_team ON content_groups (team_id, kind, created_at, id);
CREATE UNIQUE INDEX content_groups_default ON content_groups (team_id, kind) WHERE is_default;

-- Themes; styles is a JSON ThemeStyles object. One default per team.
CREATE TABLE themes (
    id          TEXT PRIMARY KEY,
    team_id     TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    styles      TEXT NOT NULL,
    is_default  BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX themes_team ON themes (team_id, created_at, id);
CREATE UNIQUE INDEX themes_default ON themes (team_id) WHERE is_default;

CREATE TABLE components (
    id          TEXT PRIMARY KEY,
    team_id     TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    lmx         TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX components_team ON components (team_id, created_at, id);

-- An email message belongs to one parent (parent_kind: transactional,
-- campaign, workflow). state: draft (editable), published (the live version
-- of a transactional email), archived (a former published version), locked
-- (a sent campaign's message). snapshot (JSON) freezes the theme and
-- components at publication so a published message never changes.
CREATE TABLE email_messages (
    id                   TEXT PRIMARY KEY,
    team_id              TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    parent_kind          TEXT NOT NULL,
    parent_id            TEXT NOT NULL,
    state                TEXT NOT NULL,
    subject              TEXT NOT NULL DEFAULT '',
    preview_text         TEXT NOT NULL DEFAULT '',
    from_name            TEXT NOT NULL DEFAULT '',
    from_email           TEXT NOT NULL DEFAULT '',
    from_domain          TEXT NOT NULL DEFAULT '',
    reply_to_email       TEXT NOT NULL DEFAULT '',
    cc_email             TEXT,
    bcc_email            TEXT,
    language_code        TEXT,
    email_format         TEXT NOT NULL DEFAULT 'styled',
    lmx                  TEXT NOT NULL DEFAULT '',
    theme_id             TEXT,
    contact_fallbacks    TEXT,
    event_fallbacks      TEXT,
    data_fallbacks       TEXT,
    snapshot             TEXT,
    content_revision_id  TEXT NOT NULL,
    created_at           INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL
);
CREATE INDEX email_messages_parent ON email_messages (parent_kind, parent_id);
CREATE INDEX email_messages_theme ON email_messages (team_id, theme_id);

-- Components an email message references (transitively); overridden when
-- the reference carries local children instead of the library body.
CREATE TABLE email_message_components (
    message_id    TEXT NOT NULL REFERENCES email_messages(id) ON DELETE CASCADE,
    component_id  TEXT NOT NULL,
    team_id       TEXT NOT NULL,
    overridden    BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (message_id, component_id)
);
CREATE INDEX email_message_components_component ON email_message_components (component_id);

CREATE TABLE transactional_emails (
    id                    TEXT PRIMARY KEY,
    team_id               TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name                  TEXT NOT NULL,
    group_id              TEXT,
    draft_message_id      TEXT,
    published_message_id  TEXT,
    data_variables        TEXT NOT NULL DEFAULT '[]',
    published_at          INTEGER,
    created_at            INTEGER NOT NULL,
    updated_at            INTEGER NOT NULL
);
CREATE INDEX transactional_emails_team ON transactional_emails (team_id, created_at, id);

-- Image uploads. state: pending (URL handed out), uploaded (bytes stored),
-- completed (public), rejected (sniffed type refused).
CREATE TABLE uploads (
    id              TEXT PRIMARY KEY,
    team_id         TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    content_type    TEXT NOT NULL,
    content_length  INTEGER NOT NULL,
    filename        TEXT NOT NULL,
    state           TEXT NOT NULL,
    expires_at      INTEGER NOT NULL,
    uploaded_at     INTEGER,
    completed_at    INTEGER,
    created_at      INTEGER NOT NULL
);
CREATE INDEX uploads_team_completed ON uploads (team_id, completed_at);

-- Rolling-window quotas (previews): one row per use, n units each; the lock
-- row serialises checks of one team and kind across nodes.
CREATE TABLE content_quota_events (
    id          TEXT PRIMARY KEY,
    team_id     TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    n           INTEGER NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX content_quota_events_team ON content_quota_events (team_id, kind, created_at);
CREATE TABLE content_quota_locks (
    team_id     TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    touched_at  INTEGER NOT NULL,
    PRIMARY KEY (team_id, kind)
);

-- Per-installation secrets (e.g. the upload URL signing key).
CREATE TABLE content_secrets (
    name        TEXT PRIMARY KEY,
    value       TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);

-- +goose Down
DROP TABLE content_secrets;
DROP TABLE content_quota_locks;
DROP TABLE content_quota_events;
DROP TABLE uploads;
DROP TABLE transactional_emails;
DROP TABLE email_message_components;
DROP TABLE email_messages;
DROP TABLE components;
DROP TABLE themes;
DROP TABLE content_groups;
