-- When each node's client certificate expires. Certificates were always issued for 365 days
-- from enrollment (to the millisecond), so earlier nodes get that date.
ALTER TABLE nodes ADD COLUMN cert_expires_at TEXT;
UPDATE nodes SET cert_expires_at =
    strftime('%Y-%m-%dT%H:%M:%S', enrolled_at, '+365 days') || substr(enrolled_at, 20);
