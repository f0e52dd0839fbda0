-- The cloud a provision or an orphan is at is no longer listed in the schema: the store
-- writes only a `ProviderId`'s identifier and refuses to read anything else, so a new cloud
-- needs no migration.
ALTER TABLE provisions DROP CONSTRAINT provisions_provider_check;
ALTER TABLE orphans DROP CONSTRAINT orphans_provider_check;
