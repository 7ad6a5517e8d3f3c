package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

const secretColumns = `kind, key, owner, label, sealed, expires_at, updated_at`

func scanSecret(row interface{ Scan(...any) error }) (*toolrouter.SealedSecret, error) {
	var s toolrouter.SealedSecret
	var expires sql.NullString
	var updated string
	if err := row.Scan(&s.Kind, &s.Key, &s.Owner, &s.Label, &s.Sealed, &expires, &updated); err != nil {
		return nil, err
	}
	var err error
	if expires.Valid {
		if s.ExpiresAt, err = parseSQLiteTime(expires.String); err != nil {
			return nil, err
		}
	}
	if s.UpdatedAt, err = parseSQLiteTime(updated); err != nil {
		return nil, err
	}
	return &s, nil
}

func (s *Store) sqliteExpires(sec *toolrouter.SealedSecret) any {
	if sec.ExpiresAt.IsZero() {
		return nil
	}
	return sqliteTimeOf(sec.ExpiresAt)
}

// PutSecret implements store.Secrets.
func (s *Store) PutSecret(ctx context.Context, sec *toolrouter.SealedSecret) error {
	now := sqliteTimeOf(s.Now())
	if _, err := s.db.ExecContext(ctx, `DELETE FROM vault WHERE rowid IN (SELECT rowid FROM vault WHERE expires_at <= ? LIMIT 100)`, now); err != nil {
		return fmt.Errorf("sqlite purge vault: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO vault (`+secretColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (kind, key) DO UPDATE SET owner = excluded.owner, label = excluded.label, sealed = excluded.sealed,
		expires_at = excluded.expires_at, updated_at = excluded.updated_at`,
		sec.Kind, sec.Key, sec.Owner, sec.Label, sec.Sealed, s.sqliteExpires(sec), now); err != nil {
		return fmt.Errorf("sqlite put secret: %w", err)
	}
	return nil
}

func (s *Store) oneSecret(ctx context.Context, what, q, kind, key string) (*toolrouter.SealedSecret, error) {
	sec, err := scanSecret(s.db.QueryRowContext(ctx, q, kind, key, sqliteTimeOf(s.Now())))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "secret not found")
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite %s secret: %w", what, err)
	}
	return sec, nil
}

// GetSecret implements store.Secrets.
func (s *Store) GetSecret(ctx context.Context, kind, key string) (*toolrouter.SealedSecret, error) {
	return s.oneSecret(ctx, "get", `SELECT `+secretColumns+` FROM vault WHERE kind = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?)`, kind, key)
}

// TakeSecret implements store.Secrets.
func (s *Store) TakeSecret(ctx context.Context, kind, key string) (*toolrouter.SealedSecret, error) {
	return s.oneSecret(ctx, "take", `DELETE FROM vault WHERE kind = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?) RETURNING `+secretColumns, kind, key)
}

// ListSecrets implements store.Secrets.
func (s *Store) ListSecrets(ctx context.Context, kind, owner string) ([]*toolrouter.SealedSecret, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+secretColumns+` FROM vault WHERE kind = ? AND owner = ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY key`,
		kind, owner, sqliteTimeOf(s.Now()))
	if err != nil {
		return nil, fmt.Errorf("sqlite list secrets: %w", err)
	}
	defer rows.Close()
	var out []*toolrouter.SealedSecret
	for rows.Next() {
		sec, err := scanSecret(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite list secrets: %w", err)
		}
		out = append(out, sec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite list secrets: %w", err)
	}
	return out, nil
}

// DeleteSecret implements store.Secrets.
func (s *Store) DeleteSecret(ctx context.Context, kind, key string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM vault WHERE kind = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?)`, kind, key, sqliteTimeOf(s.Now()))
	if err != nil {
		return false, fmt.Errorf("sqlite delete secret: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlite delete secret: %w", err)
	}
	return n > 0, nil
}
