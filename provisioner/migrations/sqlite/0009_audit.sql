-- The audit log: one row per state-changing call to the operator API. Ids are `aud_` and a
-- UUIDv7, so they sort by creation time; a page is the ids below the last one seen.
CREATE TABLE audit_events (
    id       TEXT NOT NULL PRIMARY KEY,
    at       TEXT NOT NULL,
    token_id TEXT NOT NULL,
    action   TEXT NOT NULL,
    target   TEXT NOT NULL,
    outcome  TEXT NOT NULL,
    peer     TEXT NOT NULL
) STRICT;
