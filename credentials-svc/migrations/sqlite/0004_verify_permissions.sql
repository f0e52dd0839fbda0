-- The permissions the last verification checked: a JSON array of {"name", "granted"}
-- (NULL until a verification records them, and for verifications made before this).
ALTER TABLE credentials ADD COLUMN verify_permissions TEXT;
