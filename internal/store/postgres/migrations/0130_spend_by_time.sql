-- The spend ledger ordered by time (issue 37): its key is (at_us, id), an
-- entry's start and id, so that a group commit appends its calls' entries
-- to the key's newest leaf instead of inserting each at the random place
-- of its id (a tc_ id is a hash). The key's at_us serves what spend_at did
-- (GET /usage by time, the retention sweep). spend_vserver_at holds only
-- the entries of a virtual server, the only ones its limits read.
ALTER TABLE spend DROP CONSTRAINT IF EXISTS spend_pkey;
ALTER TABLE spend ADD CONSTRAINT spend_pkey PRIMARY KEY (at_us, id);
DROP INDEX IF EXISTS spend_at;
DROP INDEX IF EXISTS spend_vserver_at;
CREATE INDEX IF NOT EXISTS spend_vserver_at ON spend (virtual_server, at_us) WHERE virtual_server <> '';
