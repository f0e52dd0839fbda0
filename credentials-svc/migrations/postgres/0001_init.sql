-- Credentials service schema (PostgreSQL). Timestamps are TIMESTAMPTZ (microsecond
-- precision, the same precision every backend stores).

-- At most one credential per provider: a sealed envelope plus non-secret metadata.
CREATE TABLE credentials (
    id                   TEXT        NOT NULL PRIMARY KEY,
    provider             TEXT        NOT NULL UNIQUE,
    envelope             BYTEA       NOT NULL,
    -- Key-encryption key wrapping the data key (denormalised from the envelope for rotation).
    kek_id               TEXT        NOT NULL,
    -- serde JSON of `CredentialIdentity`; never secret. TEXT, not JSONB: stored verbatim.
    identity_json        TEXT        NOT NULL,
    saved_at             TIMESTAMPTZ NOT NULL,
    -- Last verification: all NULL until one is recorded, cleared when the row is replaced.
    verified_ok          BOOLEAN,
    verified_at          TIMESTAMPTZ,
    verify_message       TEXT,
    verify_provider_code TEXT,
    verify_account       TEXT
);

-- Re-wrapping after a key rotation looks rows up by the key that wraps them.
CREATE INDEX credentials_kek_id_idx ON credentials (kek_id);

-- API tokens: only the SHA-256 of the secret part is stored.
CREATE TABLE api_tokens (
    id            TEXT        NOT NULL PRIMARY KEY,
    secret_sha256 BYTEA       NOT NULL CHECK (octet_length(secret_sha256) = 32),
    label         TEXT        NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL
);
