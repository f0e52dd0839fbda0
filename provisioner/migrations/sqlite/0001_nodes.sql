-- Provisioner node registry (SQLite). Timestamps are UTC RFC 3339 text with exactly six
-- fractional digits (`2025-01-31T12:00:00.123456Z`), so they compare and sort as text.

-- Join tokens: only the SHA-256 of the secret is stored, never the secret.
CREATE TABLE join_tokens (
    id            TEXT NOT NULL PRIMARY KEY,
    secret_sha256 BLOB NOT NULL CHECK (length(secret_sha256) = 32),
    -- The only node name the token may enroll, when bound.
    node_name     TEXT,
    -- The provision the token is bound to, when any.
    provision_id  TEXT,
    role          TEXT NOT NULL DEFAULT 'general' CHECK (role IN ('general', 'build')),
    created_at    TEXT NOT NULL,
    expires_at    TEXT NOT NULL,
    used_at       TEXT,
    -- No foreign key: the token keeps naming its node after the node is deleted.
    used_by_node  TEXT,
    revoked_at    TEXT,
    CHECK ((used_at IS NULL) = (used_by_node IS NULL))
) STRICT;

-- Revoking a failed or deleted provision's tokens looks them up by provision.
CREATE INDEX join_tokens_provision_id_idx ON join_tokens (provision_id)
    WHERE provision_id IS NOT NULL;

-- Enrolled nodes. The name is unique: the database, not the application, decides which of
-- two concurrent enrollments of a name wins.
CREATE TABLE nodes (
    id               TEXT NOT NULL PRIMARY KEY,
    name             TEXT NOT NULL,
    -- JSON array of strings.
    addresses        TEXT NOT NULL DEFAULT '[]',
    agent_version    TEXT NOT NULL,
    -- JSON array of `apps` / `builds`.
    workload_kinds   TEXT NOT NULL,
    provision_id     TEXT,
    enrolled_at      TEXT NOT NULL,
    last_seen_at     TEXT NOT NULL,
    -- Serial number (hex) and SHA-256 (hex, of the DER) of the node's client certificate.
    cert_serial      TEXT NOT NULL,
    cert_fingerprint TEXT NOT NULL,
    CONSTRAINT nodes_name_key UNIQUE (name)
) STRICT;

-- Cloud-init progress of provisioned nodes: one row per reported step.
CREATE TABLE install_progress (
    provision_id TEXT NOT NULL,
    step         TEXT NOT NULL CHECK (step IN ('docker_ready', 'image_pulled', 'agent_started')),
    reported_at  TEXT NOT NULL,
    PRIMARY KEY (provision_id, step)
) STRICT;
