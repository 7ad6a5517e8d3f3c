-- One row the readiness check rewrites while the group commit fails (a
-- full disk, issue 21 item 7): a real write, so readiness comes back by
-- itself once writes succeed again, with or without traffic.
CREATE TABLE write_probe (
	id integer PRIMARY KEY,
	at timestamptz NOT NULL
);
