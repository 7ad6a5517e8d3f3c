-- The audit trail's write per routed call, lighter (issue 10): audit_tool_id
-- served no query (GET /audit's tool filter is "tool = $1 OR tool_name = $2",
-- which PostgreSQL answers by scanning audit_pkey backward, EXPLAIN with
-- 50,000 records). audit_at stays: here it serves the since/until filters.
DROP INDEX IF EXISTS audit_tool_id;
