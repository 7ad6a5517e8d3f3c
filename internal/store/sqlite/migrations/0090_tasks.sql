-- Tasks (issue 34): tool calls toolrouterd runs in the background for a
-- client that polls them (GET /tasks/{id}, tasks/get on /mcp). body is the
-- task's JSON (its result once finished); the columns are what changes
-- while it runs, or what a sweep selects on.
CREATE TABLE tasks (
	task_id          TEXT PRIMARY KEY,
	client           TEXT NOT NULL,
	status           TEXT NOT NULL,
	status_message   TEXT NOT NULL DEFAULT '',
	cancel_requested INTEGER NOT NULL DEFAULT 0,
	progress         TEXT NOT NULL DEFAULT '',
	created_at       TEXT NOT NULL,
	updated_at       TEXT NOT NULL,
	heartbeat_at     TEXT NOT NULL,
	body             TEXT NOT NULL
);
CREATE INDEX tasks_status_heartbeat ON tasks (status, heartbeat_at);
CREATE INDEX tasks_updated_at ON tasks (updated_at);
