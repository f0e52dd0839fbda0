-- Orphaned servers (PostgreSQL): servers this control plane made that no live provision or
-- node accounts for. Timestamps are TIMESTAMPTZ (microseconds).
CREATE TABLE orphans (
    id           TEXT        NOT NULL PRIMARY KEY,
    provider     TEXT        NOT NULL
        CHECK (provider IN ('hetzner', 'digitalocean', 'aws', 'azure', 'gcp')),
    -- The provider's server id; NULL when an undo never learnt it (found by labels then).
    server_id    TEXT,
    -- The server id, or 'provision:<provision id>' without one: a re-found orphan is the
    -- same row.
    server_key   TEXT        NOT NULL,
    provision_id TEXT        NOT NULL,
    node_name    TEXT        NOT NULL,
    region       TEXT        NOT NULL,
    reason       TEXT        NOT NULL
        CHECK (reason IN ('undo_gave_up', 'failed_provision', 'unknown_provision')),
    first_seen   TIMESTAMPTZ NOT NULL,
    attempts     BIGINT      NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- One clean line, never a raw provider body.
    last_error   TEXT,
    state        TEXT        NOT NULL CHECK (state IN ('pending', 'deleted', 'adopted')),
    updated_at   TIMESTAMPTZ NOT NULL,
    CONSTRAINT orphans_server_key UNIQUE (provider, server_key)
);

CREATE INDEX orphans_first_seen_idx ON orphans (first_seen, id);
