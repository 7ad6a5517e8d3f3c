-- The execute_code call whose program made the call (docs/code-mode.md):
-- its tool_call_id; '' for a call a client made.
ALTER TABLE audit ADD COLUMN parent_tool_call_id TEXT NOT NULL DEFAULT '';
