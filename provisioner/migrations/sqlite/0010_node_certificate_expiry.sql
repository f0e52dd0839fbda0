-- When each node's client certificate expires (its notAfter). Earlier releases issued
-- every certificate for 365 days from its signing, a moment before the enrollment was
-- stored, so earlier nodes get their enrollment time plus 365 days (within a second).
ALTER TABLE nodes ADD COLUMN cert_expires_at TEXT;
UPDATE nodes SET cert_expires_at =
    strftime('%Y-%m-%dT%H:%M:%S', enrolled_at, '+365 days') || substr(enrolled_at, 20);
