-- Approvals by client (issue 21 item 5): GET /approvals of a client that
-- is no approver filters in the store, the cap on a client's pending
-- approvals counts them, and the retention sweep deletes decided ones by
-- age. client is backfilled from the body.
ALTER TABLE approvals ADD COLUMN client TEXT NOT NULL DEFAULT '';
UPDATE approvals SET client = coalesce(body->>'client', '');
CREATE INDEX approvals_client_created_at ON approvals (client, created_at, approval_id);
CREATE INDEX approvals_pending_client ON approvals (client) WHERE status = 'pending';
CREATE INDEX approvals_created_at ON approvals (created_at, approval_id);
