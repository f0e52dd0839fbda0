-- Credentials service schema (SQLite). Timestamps are UTC RFC 3339 text with exactly six
-- fractional digits (`2025-01-31T12:00:00.123456Z`), so they sort as text.

-- At most one credential per provider: a sealed envelope plus non-secret metadata.
CREATE TABLE credentials (
    id                   TEXT    NOT NULL PRIMARY KEY,
    provider             TEXT    NOT NULL UNIQUE,
    envelope             BLOB    NOT NULL,
    -- Key-encryption key wrapping the data key (denormalised from the envelope for rotation).
    kek_id               TEXT    NOT NULL,
    -- serde JSON of `CredentialIdentity`; never secret.
    identity_json        TEXT    NOT NULL,
    saved_at             TEXT    NOT NULL,
    -- Last verification: all NULL until one is recorded, cleared when the row is replaced.
    verified_ok          INTEGER CHECK (verified_ok IN (0, 1)),
    verified_at          TEXT,
    verify_message       TEXT,
    verify_provider_code TEXT,
    verify_account       TEXT
) STRICT;

-- Re-wrapping after a key rotation looks rows up by the key that wraps them.
CREATE INDEX credentials_kek_id_idx ON credentials (kek_id);

-- API tokens: only the SHA-256 of the secret part is stored.
CREATE TABLE api_tokens (
    id            TEXT NOT NULL PRIMARY KEY,
    secret_sha256 BLOB NOT NULL CHECK (length(secret_sha256) = 32),
    label         TEXT NOT NULL,
    created_at    TEXT NOT NULL
) STRICT;
