-- The audit trail (docs/security.md "Audit trail"): one row per tool call attempt,
-- newest first by id. Times as in 0002 (fixed-width UTC text).
CREATE TABLE audit (
	id             INTEGER PRIMARY KEY AUTOINCREMENT,
	at             TEXT NOT NULL,
	client         TEXT NOT NULL,
	entry_point    TEXT NOT NULL,
	plan_id        TEXT NOT NULL,
	sequence       INTEGER,
	tool_call_id   TEXT NOT NULL,
	tool_name      TEXT NOT NULL,
	tool           TEXT NOT NULL,
	args_sha256    TEXT NOT NULL,
	outcome        TEXT NOT NULL,
	error_category TEXT NOT NULL,
	duration_ms    REAL NOT NULL,
	replica        TEXT NOT NULL
);
CREATE INDEX audit_at ON audit (at);
CREATE INDEX audit_client_id ON audit (client, id);
CREATE INDEX audit_tool_id ON audit (tool, id);

-- Rate limit counters: one row per client and fixed window.
CREATE TABLE rate_counters (
	client       TEXT NOT NULL,
	window_start TEXT NOT NULL,
	used         INTEGER NOT NULL,
	PRIMARY KEY (client, window_start)
);
