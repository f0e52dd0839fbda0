-- Leases in a narrow table of their own: a replica renews the leases of every provision it
-- drives every ten seconds, and on the provisions table each renewal rewrote the whole row
-- (its saga log, stages and sealed token, about a kilobyte) and its index entries. A lease
-- row holds the holder and the time alone.
--
-- A provision has a lease row while it is in flight (inserted with it, deleted by the write
-- that finishes it), so the table is the list of provisions in flight, and resuming reads
-- it instead of an index over the provisions. The fencing epoch stays on the provision:
-- every write of the provision is conditional on it, in the same row, and it moves only
-- when a lease is taken anew or released.
CREATE TABLE provision_leases (
    provision_id TEXT NOT NULL PRIMARY KEY,
    -- The replica driving the provision, until when (both NULL: released).
    lease_owner  TEXT,
    lease_until  TEXT
) STRICT;

INSERT INTO provision_leases (provision_id, lease_owner, lease_until)
    SELECT id, lease_owner, lease_until FROM provisions WHERE status NOT IN ('ready', 'failed');

DROP INDEX provisions_in_flight_idx;
ALTER TABLE provisions DROP COLUMN lease_owner;
ALTER TABLE provisions DROP COLUMN lease_until;
