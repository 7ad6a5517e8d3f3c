-- Bodies are json (not jsonb): the text is kept byte for byte, key order
-- included, so a stored result or run reads back exactly as written.

-- Route results by tool_call_id.
CREATE TABLE route_results (
	tool_call_id TEXT PRIMARY KEY,
	plan_id      TEXT NOT NULL,
	body         JSON NOT NULL,
	created_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Idempotency-Key claims: response is NULL while the request runs.
CREATE TABLE idempotency_keys (
	key         TEXT PRIMARY KEY,
	fingerprint TEXT NOT NULL,
	response    BYTEA,
	expires_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);

-- /runs: body is the Run JSON; owner and heartbeat_at live only in columns.
CREATE TABLE runs (
	run_id       TEXT PRIMARY KEY,
	plan_id      TEXT NOT NULL,
	status       TEXT NOT NULL,
	owner        TEXT NOT NULL DEFAULT '',
	heartbeat_at TIMESTAMPTZ NOT NULL,
	created_at   TIMESTAMPTZ NOT NULL,
	body         JSON NOT NULL
);
CREATE INDEX runs_plan_id_created_at ON runs (plan_id, created_at DESC);
CREATE INDEX runs_running_heartbeat_at ON runs (heartbeat_at) WHERE status = 'running';
