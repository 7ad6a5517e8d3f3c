-- GET /audit lists records newest first by their time (the call's start),
-- then id, not by id alone (issue 21 item 9): a slow call that started
-- first is written last. An index on at (the rowid, id, is in every index)
-- serves the unfiltered list and its cursor, one on (client, at) the
-- client filter, which the (client, id) index no longer serves.
CREATE INDEX audit_at_id ON audit (at);
DROP INDEX audit_client_id;
CREATE INDEX audit_client_at ON audit (client, at);
