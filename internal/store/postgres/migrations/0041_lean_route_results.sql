-- The SQLite store's migration 0041 drops route_results_created_at and
-- sweeps results by rowid; PostgreSQL has no stable insertion order to
-- sweep by (ctid moves), so here the index stays. This version keeps the
-- two stores' numbering in step.
SELECT 1;
