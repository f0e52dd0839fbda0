-- What a token may call, and until when. Tokens made before scopes existed were all-powerful
-- and stay so (`admin`); they never expire.
ALTER TABLE api_tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'admin'
    CHECK (scope IN ('read', 'provision', 'credentials-admin', 'admin'));
ALTER TABLE api_tokens ADD COLUMN expires_at TEXT;
