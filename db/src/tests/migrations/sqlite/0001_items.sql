CREATE TABLE items (
    id      TEXT    NOT NULL PRIMARY KEY,
    kind    TEXT    NOT NULL,
    label   TEXT    NOT NULL,
    secret  BLOB,
    count   INTEGER NOT NULL,
    flag    BOOLEAN,
    at      TEXT,
    UNIQUE (kind, label)
);
