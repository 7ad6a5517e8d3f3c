-- Marks (issue 21): small facts replicas share until they expire, such as
-- the MCP sessions terminated and the key signing MCP requestStates.
CREATE TABLE marks (
	key        TEXT PRIMARY KEY,
	value      TEXT NOT NULL,
	expires_at TEXT NOT NULL
);
CREATE INDEX marks_expires_at ON marks (expires_at);
