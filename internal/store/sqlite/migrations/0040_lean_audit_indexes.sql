-- The audit trail's write per routed call, lighter (issue 10): audit_tool_id
-- served no query (GET /audit's tool filter is "tool = ? OR tool_name = ?",
-- which SQLite answers by scanning ids, newest first), and audit_at only the
-- retention sweep, which now takes the oldest ids instead (audit.go).
DROP INDEX audit_tool_id;
DROP INDEX audit_at;
