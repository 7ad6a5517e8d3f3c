-- One audit record per request refused by a rate limit (issue 21): how
-- many calls it held and their distinct tool names, each between newlines
-- (toolrouter.ToolNames), so GET /audit?tool=X finds the refusal.
ALTER TABLE audit ADD COLUMN calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE audit ADD COLUMN tools TEXT NOT NULL DEFAULT '';
