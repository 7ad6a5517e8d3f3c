-- The client that started a run (docs/security.md "Clients", isolation); '' on an
-- open service and for runs stored before clients existed.
ALTER TABLE runs ADD COLUMN client TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_client_plan_id_created_at ON runs (client, plan_id, created_at DESC);
