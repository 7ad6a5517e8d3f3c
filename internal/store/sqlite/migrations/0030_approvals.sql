-- Approvals (docs/approvals.md "Approvals"): body is the Approval JSON; status,
-- run_id and the times are columns too, for the conditional decision and
-- the expiry sweep. Timestamps as in 0002 (fixed-width UTC text).
CREATE TABLE approvals (
	approval_id  TEXT PRIMARY KEY,
	tool_call_id TEXT NOT NULL,
	status       TEXT NOT NULL,
	run_id       TEXT NOT NULL DEFAULT '',
	created_at   TEXT NOT NULL,
	expires_at   TEXT NOT NULL,
	body         TEXT NOT NULL
);
CREATE INDEX approvals_status_created_at ON approvals (status, created_at DESC);
CREATE INDEX approvals_run_id ON approvals (run_id) WHERE run_id <> '';
CREATE INDEX approvals_pending_expires_at ON approvals (expires_at) WHERE status = 'pending';
