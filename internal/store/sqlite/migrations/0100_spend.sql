-- The spend ledger (issue 36, docs/costs.md): one row per tool call or
-- model turn that ran (or is reserved to run), what it cost in micro-units
-- of its currency (0 and unpriced = 1 when nothing prices it). Spend limits
-- and GET /usage both read it. at_us is the call's start in Unix
-- microseconds, day its UTC date.
CREATE TABLE spend (
	id             TEXT PRIMARY KEY,
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
	cached_tokens  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX spend_client_at ON spend (client, at_us);
CREATE INDEX spend_vserver_at ON spend (virtual_server, at_us);
CREATE INDEX spend_at ON spend (at_us);
