-- The token vault (issue 33): OAuth connections, client registrations,
-- connect states and kept subject tokens, each sealed (AES-GCM) by
-- internal/vault before it is stored.
CREATE TABLE vault (
	kind       TEXT NOT NULL,
	key        TEXT NOT NULL,
	owner      TEXT NOT NULL,
	label      TEXT NOT NULL,
	sealed     TEXT NOT NULL,
	expires_at TEXT,
	updated_at TEXT NOT NULL,
	PRIMARY KEY (kind, key)
);
CREATE INDEX vault_owner ON vault (kind, owner);
CREATE INDEX vault_expires_at ON vault (expires_at);
