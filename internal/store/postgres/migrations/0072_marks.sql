-- Marks (issue 21): small facts replicas share until they expire, such as
-- the MCP sessions terminated and the key signing MCP requestStates.
CREATE TABLE IF NOT EXISTS marks (
	key        TEXT PRIMARY KEY,
	value      TEXT NOT NULL,
	expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS marks_expires_at ON marks (expires_at);
