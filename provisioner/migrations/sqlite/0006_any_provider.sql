-- The cloud a provision or an orphan is at is no longer listed in the schema: the store
-- writes only a `ProviderId`'s identifier and refuses to read anything else, so a new cloud
-- needs no migration. SQLite cannot drop a CHECK constraint: both tables are rebuilt, as
-- they were.

CREATE TABLE provisions_0006 (
    id                  TEXT    NOT NULL PRIMARY KEY,
    -- A cloud's identifier (`ProviderId`); the store refuses to read any other.
    provider            TEXT    NOT NULL,
    region              TEXT    NOT NULL,
    size                TEXT    NOT NULL,
    name                TEXT    NOT NULL,
    role                TEXT    NOT NULL CHECK (role IN ('general', 'build')),
    status              TEXT    NOT NULL
        CHECK (status IN ('creating', 'booting', 'installing', 'enrolling', 'ready', 'failed')),
    install_step        TEXT
        CHECK (install_step IN ('docker_ready', 'agent_verified', 'agent_started')),
    ip_address          TEXT,
    node_id             TEXT,
    failed_phase        TEXT
        CHECK (failed_phase IN ('creating', 'booting', 'installing', 'enrolling')),
    -- One clean line, never a raw provider body.
    failure_reason      TEXT,
    provider_error_code TEXT,
    provider_server_id  TEXT,
    join_token_id       TEXT,
    -- The join token, AES-256-GCM-sealed under the caller's sealing key with the provision
    -- id as associated data; needed again only if the create must be repeated.
    sealed_join_token   BLOB,
    -- The client's idempotency key of `Provision`.
    request_id          TEXT,
    keep_on_failure     INTEGER NOT NULL CHECK (keep_on_failure IN (0, 1)),
    cancel_requested    INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1)),
    -- JSON array of OpenSSH public keys.
    ssh_public_keys     TEXT    NOT NULL DEFAULT '[]',
    ssh_source_cidr     TEXT,
    image               TEXT,
    control_plane_addr  TEXT    NOT NULL,
    credential_id       TEXT    NOT NULL,
    -- The saga step to run next, and the JSON log of what each completed step observed.
    saga_step           TEXT    NOT NULL,
    saga                TEXT    NOT NULL DEFAULT '{}',
    -- JSON array of {status, entered_at}.
    stages              TEXT    NOT NULL DEFAULT '[]',
    generation          INTEGER NOT NULL CHECK (generation >= 1),
    -- The replica driving the provision, until when.
    lease_owner         TEXT,
    lease_until         TEXT,
    created_at          TEXT    NOT NULL,
    updated_at          TEXT    NOT NULL,
    CONSTRAINT provisions_request_id_key UNIQUE (request_id),
    -- A finished provision keeps no token secret, even sealed.
    CHECK (status NOT IN ('ready', 'failed') OR sealed_join_token IS NULL)
) STRICT;
INSERT INTO provisions_0006 (id, provider, region, size, name, role, status, install_step, ip_address, node_id, failed_phase, failure_reason, provider_error_code, provider_server_id, join_token_id, sealed_join_token, request_id, keep_on_failure, cancel_requested, ssh_public_keys, ssh_source_cidr, image, control_plane_addr, credential_id, saga_step, saga, stages, generation, lease_owner, lease_until, created_at, updated_at)
    SELECT id, provider, region, size, name, role, status, install_step, ip_address, node_id, failed_phase, failure_reason, provider_error_code, provider_server_id, join_token_id, sealed_join_token, request_id, keep_on_failure, cancel_requested, ssh_public_keys, ssh_source_cidr, image, control_plane_addr, credential_id, saga_step, saga, stages, generation, lease_owner, lease_until, created_at, updated_at
    FROM provisions;
DROP TABLE provisions;
ALTER TABLE provisions_0006 RENAME TO provisions;

-- Newest first, paged by (created_at, id).
CREATE INDEX provisions_created_idx ON provisions (created_at DESC, id DESC);

-- Resuming after a restart looks only at provisions still in flight.
CREATE INDEX provisions_in_flight_idx ON provisions (lease_until)
    WHERE status NOT IN ('ready', 'failed');

CREATE TABLE orphans_0006 (
    id           TEXT    NOT NULL PRIMARY KEY,
    -- A cloud's identifier (`ProviderId`); the store refuses to read any other.
    provider     TEXT    NOT NULL,
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
INSERT INTO orphans_0006 (id, provider, server_id, server_key, provision_id, node_name, region, reason, first_seen, attempts, last_error, state, updated_at)
    SELECT id, provider, server_id, server_key, provision_id, node_name, region, reason, first_seen, attempts, last_error, state, updated_at
    FROM orphans;
DROP TABLE orphans;
ALTER TABLE orphans_0006 RENAME TO orphans;

CREATE INDEX orphans_first_seen_idx ON orphans (first_seen, id);
