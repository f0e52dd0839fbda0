-- Fencing: taking a provision's lease anew (free or expired) or releasing it bumps its
-- epoch (a renewal of a live lease does not; a terminal write clears the lease for good),
-- and every write of the row is conditional on the epoch it read, so a driver that lost
-- its lease cannot write after another took over.
ALTER TABLE provisions ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0 CHECK (lease_epoch >= 0);
