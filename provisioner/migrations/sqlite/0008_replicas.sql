-- What every provisioner replica sharing a database must agree on (the node CA, the
-- control-plane id). SQLite serves one process, which keeps them in its data directory;
-- the table exists so both dialects pass the same conformance suite. (The PostgreSQL
-- migration also adds the change feed's triggers: a SQLite database has one process and
-- no one to tell.)
CREATE TABLE shared_state (
    name       TEXT NOT NULL PRIMARY KEY,
    value      BLOB NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
