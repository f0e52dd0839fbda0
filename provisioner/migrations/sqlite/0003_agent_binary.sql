-- Nodes download and verify the control plane's own agent binary: the install step that was
-- `image_pulled` is now `agent_verified` (binary checked against its SHA-256, or the pinned
-- image pulled); a step may be reported as failed, with its reason; and a node keeps the
-- certificate it was issued, so a retried Enroll (its answer lost) gets the same identity.
-- SQLite cannot alter a CHECK constraint: both tables are rebuilt.

CREATE TABLE install_progress_0003 (
    provision_id TEXT NOT NULL,
    step         TEXT NOT NULL CHECK (step IN ('docker_ready', 'agent_verified', 'agent_started')),
    reported_at  TEXT NOT NULL,
    -- Why the step failed (one clean line from the node); NULL when it succeeded.
    error        TEXT,
    PRIMARY KEY (provision_id, step)
) STRICT;
INSERT INTO install_progress_0003 (provision_id, step, reported_at)
    SELECT provision_id,
           CASE step WHEN 'image_pulled' THEN 'agent_verified' ELSE step END,
           reported_at
    FROM install_progress;
DROP TABLE install_progress;
ALTER TABLE install_progress_0003 RENAME TO install_progress;

CREATE TABLE provisions_0003 (
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
INSERT INTO provisions_0003 (id, provider, region, size, name, role, status, install_step, ip_address, node_id, failed_phase, failure_reason, provider_error_code, provider_server_id, join_token_id, sealed_join_token, request_id, keep_on_failure, cancel_requested, ssh_public_keys, ssh_source_cidr, image, control_plane_addr, credential_id, saga_step, saga, stages, generation, lease_owner, lease_until, created_at, updated_at)
    SELECT id, provider, region, size, name, role, status, CASE install_step WHEN 'image_pulled' THEN 'agent_verified' ELSE install_step END, ip_address, node_id, failed_phase, failure_reason, provider_error_code, provider_server_id, join_token_id, sealed_join_token, request_id, keep_on_failure, cancel_requested, ssh_public_keys, ssh_source_cidr, image, control_plane_addr, credential_id, saga_step, saga, stages, generation, lease_owner, lease_until, created_at, updated_at
    FROM provisions;
DROP TABLE provisions;
ALTER TABLE provisions_0003 RENAME TO provisions;

-- Newest first, paged by (created_at, id).
CREATE INDEX provisions_created_idx ON provisions (created_at DESC, id DESC);

-- Resuming after a restart looks only at provisions still in flight.
CREATE INDEX provisions_in_flight_idx ON provisions (lease_until)
    WHERE status NOT IN ('ready', 'failed');

-- The node's client certificate (PEM), as issued.
ALTER TABLE nodes ADD COLUMN certificate_pem TEXT;
