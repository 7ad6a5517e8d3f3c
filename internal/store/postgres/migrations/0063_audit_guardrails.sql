-- The decisions of the guardrails that looked at a call (docs/trusting-tools.md "Trusting
-- tools"): a JSON list of {name, phase, decision, mode, reason, redacted},
-- '' when none did.
ALTER TABLE audit ADD COLUMN guardrails TEXT NOT NULL DEFAULT '';
