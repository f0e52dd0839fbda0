-- Leases in a narrow table of their own: a replica renews the leases of every provision it
-- drives every ten seconds, and on the provisions table each renewal wrote a new version of
-- the whole row (its saga log, stages and sealed token, about a kilobyte) and an entry in
-- every one of its indexes. A lease row holds the holder and the time alone; `lease_until`
-- is in no index, so a renewal is a heap-only update of a few dozen bytes.
--
-- A provision has a lease row while it is in flight (inserted with it, deleted by the write
-- that finishes it), so the table is the list of provisions in flight, and resuming reads
-- it instead of an index over the provisions. The fencing epoch stays on the provision:
-- every write of the provision is conditional on it, in the same row, and it moves only
-- when a lease is taken anew or released.
CREATE TABLE provision_leases (
    provision_id TEXT        NOT NULL PRIMARY KEY,
    -- The replica driving the provision, until when (both NULL: released).
    lease_owner  TEXT,
    lease_until  TIMESTAMPTZ
) WITH (fillfactor = 50);

-- No replica of an earlier release may insert a provision between the copy and the drop
-- (it would be left without a lease row, and never resumed): the table is locked until the
-- migration commits.
LOCK TABLE provisions IN EXCLUSIVE MODE;

INSERT INTO provision_leases (provision_id, lease_owner, lease_until)
    SELECT id, lease_owner, lease_until FROM provisions WHERE status NOT IN ('ready', 'failed');

-- Dropping lease_until drops provisions_in_flight_idx with it.
ALTER TABLE provisions DROP COLUMN lease_owner, DROP COLUMN lease_until;
