-- Timestamps are TEXT in UTC, fixed width with nanoseconds
-- (2006-01-02T15:04:05.000000000Z), so they compare and sort as strings.

-- Route results by tool_call_id; body is the RouteResult JSON as encoded.
CREATE TABLE route_results (
	tool_call_id TEXT PRIMARY KEY,
	plan_id      TEXT NOT NULL,
	body         TEXT NOT NULL,
	created_at   TEXT NOT NULL
);

-- Idempotency-Key claims: response is NULL while the request runs.
CREATE TABLE idempotency_keys (
	key         TEXT PRIMARY KEY,
	fingerprint TEXT NOT NULL,
	response    BLOB,
	expires_at  TEXT NOT NULL
);
CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);

-- /runs: body is the Run JSON; owner and heartbeat_at live only in columns.
CREATE TABLE runs (
	run_id       TEXT PRIMARY KEY,
	plan_id      TEXT NOT NULL,
	status       TEXT NOT NULL,
	owner        TEXT NOT NULL DEFAULT '',
	heartbeat_at TEXT NOT NULL,
	created_at   TEXT NOT NULL,
	body         TEXT NOT NULL
);
CREATE INDEX runs_plan_id_created_at ON runs (plan_id, created_at DESC);
CREATE INDEX runs_running_heartbeat_at ON runs (heartbeat_at) WHERE status = 'running';
