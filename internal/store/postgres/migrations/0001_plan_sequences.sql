-- Per-plan sequences: next is the number the next NextSequence hands out.
CREATE TABLE IF NOT EXISTS plan_sequences (
	plan_id TEXT PRIMARY KEY,
	next    BIGINT NOT NULL
);
