-- Cancellation requested by POST /runs/{id}/cancel, seen by the replica
-- running the run at its next heartbeat; indexes for the retention sweep
-- (docs/operations.md "Retention"), which deletes in small batches, oldest first.
ALTER TABLE runs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_finished_heartbeat_at ON runs (heartbeat_at) WHERE status <> 'running';
CREATE INDEX route_results_created_at ON route_results (created_at);
