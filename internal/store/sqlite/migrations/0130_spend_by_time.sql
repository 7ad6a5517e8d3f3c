-- The spend ledger ordered by time (issue 37): its key is (at_us, id), an
-- entry's start and id, in a table without rowid, so that a group commit
-- appends its calls' entries where the newest are instead of inserting
-- each at the random place of its id (a tc_ id is a hash): one page less
-- written per routed call (BenchmarkCommitGroup/routes=16/spend: 3.40 ->
-- 2.28 log pages per call). The key's at_us serves what spend_at did
-- (GET /usage by time, the retention sweep). spend_vserver_at holds only
-- the entries of a virtual server, the only ones its limits read.
CREATE TABLE spend_by_time (
	id             TEXT NOT NULL,
	at_us          INTEGER NOT NULL,
	day            TEXT NOT NULL,
	client         TEXT NOT NULL,
	virtual_server TEXT NOT NULL DEFAULT '',
	tool           TEXT NOT NULL DEFAULT '',
	model          TEXT NOT NULL DEFAULT '',
	run_id         TEXT NOT NULL DEFAULT '',
	currency       TEXT NOT NULL DEFAULT '',
	amount         INTEGER NOT NULL DEFAULT 0,
	unpriced       INTEGER NOT NULL DEFAULT 0,
	input_tokens   INTEGER NOT NULL DEFAULT 0,
	output_tokens  INTEGER NOT NULL DEFAULT 0,
	cached_tokens  INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (at_us, id)
) WITHOUT ROWID;
INSERT INTO spend_by_time (id, at_us, day, client, virtual_server, tool, model, run_id, currency, amount, unpriced,
		input_tokens, output_tokens, cached_tokens)
	SELECT id, at_us, day, client, virtual_server, tool, model, run_id, currency, amount, unpriced,
		input_tokens, output_tokens, cached_tokens FROM spend;
DROP TABLE spend;
ALTER TABLE spend_by_time RENAME TO spend;
CREATE INDEX spend_client_at ON spend (client, at_us);
CREATE INDEX spend_vserver_at ON spend (virtual_server, at_us) WHERE virtual_server <> '';
