-- Orphaned servers (SQLite): servers this control plane made that no live provision or
-- node accounts for. Timestamps are UTC RFC 3339 text with six fractional digits, as in 0001.
CREATE TABLE orphans (
    id           TEXT    NOT NULL PRIMARY KEY,
    provider     TEXT    NOT NULL
        CHECK (provider IN ('hetzner', 'digitalocean', 'aws', 'azure', 'gcp')),
    -- The provider's server id; NULL when an undo never learnt it (found by labels then).
    server_id    TEXT,
    -- The server id, or 'provision:<provision id>' without one: a re-found orphan is the
    -- same row.
    server_key   TEXT    NOT NULL,
    provision_id TEXT    NOT NULL,
    node_name    TEXT    NOT NULL,
    region       TEXT    NOT NULL,
    reason       TEXT    NOT NULL
        CHECK (reason IN ('undo_gave_up', 'failed_provision', 'unknown_provision')),
    first_seen   TEXT    NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- One clean line, never a raw provider body.
    last_error   TEXT,
    state        TEXT    NOT NULL CHECK (state IN ('pending', 'deleted', 'adopted')),
    updated_at   TEXT    NOT NULL,
    CONSTRAINT orphans_server_key UNIQUE (provider, server_key)
) STRICT;

CREATE INDEX orphans_first_seen_idx ON orphans (first_seen, id);
