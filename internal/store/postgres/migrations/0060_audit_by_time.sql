-- GET /audit lists records newest first by their time (the call's start),
-- then id, not by id alone (issue 21 item 9): a slow call that started
-- first is written last. (at, id) serves the list and its cursor
-- ("(at, id) < ($1, $2)"), (client, at, id) the client filter; they
-- replace audit_at and audit_client_id.
CREATE INDEX audit_at_id ON audit (at, id);
DROP INDEX IF EXISTS audit_at;
CREATE INDEX audit_client_at_id ON audit (client, at, id);
DROP INDEX IF EXISTS audit_client_id;
