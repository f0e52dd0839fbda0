CREATE TABLE items (
    id      TEXT        NOT NULL PRIMARY KEY,
    kind    TEXT        NOT NULL,
    label   TEXT        NOT NULL,
    secret  BYTEA,
    count   BIGINT      NOT NULL,
    flag    BOOLEAN,
    at      TIMESTAMPTZ,
    UNIQUE (kind, label)
);
