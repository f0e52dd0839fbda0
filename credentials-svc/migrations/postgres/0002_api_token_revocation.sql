-- A revoked API token keeps its row (who had access, and until when); only rows with no
-- `revoked_at` authenticate.
ALTER TABLE api_tokens ADD COLUMN revoked_at TIMESTAMPTZ;
