-- The backend credential a call was made with (docs/backend-auth.md): JSON
-- {mode, sub, act, token_id}, never the token; '' for static headers.
ALTER TABLE audit ADD COLUMN credential TEXT NOT NULL DEFAULT '';
