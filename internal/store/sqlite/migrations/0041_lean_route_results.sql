-- A routed call's write, lighter (issue 10): route_results_created_at was
-- one more b-tree written per group commit (its leaf, and its parent when
-- the leaf splits) for the retention sweep alone, which now takes the
-- oldest rowids instead (runs_admin.go), as PurgeAudit takes the oldest
-- audit ids (migration 0040).
DROP INDEX route_results_created_at;
