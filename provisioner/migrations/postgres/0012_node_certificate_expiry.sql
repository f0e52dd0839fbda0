-- When each node's client certificate expires (its notAfter). Earlier releases issued
-- every certificate for 365 days from its signing, a moment before the enrollment was
-- stored, so earlier nodes get their enrollment time plus 365 days (within a second).
-- (Hours, not days: day arithmetic on TIMESTAMPTZ follows the session's time zone.)
ALTER TABLE nodes ADD COLUMN cert_expires_at TIMESTAMPTZ;
UPDATE nodes SET cert_expires_at = enrolled_at + INTERVAL '8760 hours';
