-- Provisions and name claims (SQLite). Timestamps are UTC RFC 3339 text with exactly six
-- fractional digits, as in 0001, so they compare and sort as text.

-- One row per provision: what was asked for, where the durable workflow (saga) stands, and
-- what the operator sees. Every write is conditional on `generation`.
CREATE TABLE provisions (
    id                  TEXT    NOT NULL PRIMARY KEY,
    provider            TEXT    NOT NULL
        CHECK (provider IN ('hetzner', 'digitalocean', 'aws', 'azure', 'gcp')),
    region              TEXT    NOT NULL,
    size                TEXT    NOT NULL,
    name                TEXT    NOT NULL,
    role                TEXT    NOT NULL CHECK (role IN ('general', 'build')),
    status              TEXT    NOT NULL
        CHECK (status IN ('creating', 'booting', 'installing', 'enrolling', 'ready', 'failed')),
    install_step        TEXT
        CHECK (install_step IN ('docker_ready', 'image_pulled', 'agent_started')),
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

-- Newest first, paged by (created_at, id).
CREATE INDEX provisions_created_idx ON provisions (created_at DESC, id DESC);

-- Resuming after a restart looks only at provisions still in flight.
CREATE INDEX provisions_in_flight_idx ON provisions (lease_until)
    WHERE status NOT IN ('ready', 'failed');

-- Who holds a node name: an enrolled node or a provision that has not failed. The primary
-- key makes the database, not the application, decide between concurrent requests.
CREATE TABLE name_claims (
    name        TEXT NOT NULL PRIMARY KEY,
    holder_kind TEXT NOT NULL CHECK (holder_kind IN ('provision', 'node')),
    holder_id   TEXT NOT NULL
) STRICT;

CREATE INDEX name_claims_holder_idx ON name_claims (holder_kind, holder_id);

-- Nodes enrolled before this migration hold their names.
INSERT INTO name_claims (name, holder_kind, holder_id) SELECT name, 'node', id FROM nodes;
