-- When each node's client certificate expires. Certificates were always issued for 365 days
-- from enrollment (to the millisecond), so earlier nodes get that date.
ALTER TABLE nodes ADD COLUMN cert_expires_at TIMESTAMPTZ;
UPDATE nodes SET cert_expires_at = enrolled_at + INTERVAL '365 days';
