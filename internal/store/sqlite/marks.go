package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// PutMark implements store.Marks: one upsert that replaces only an expired
// mark, after deleting (a bounded number of) expired ones.
func (s *Store) PutMark(ctx context.Context, key, value string, expires time.Time) (string, error) {
	now := sqliteTimeOf(s.Now())
	if _, err := s.db.ExecContext(ctx, `DELETE FROM marks WHERE key IN (SELECT key FROM marks WHERE expires_at <= ? LIMIT 100)`, now); err != nil {
		return "", fmt.Errorf("sqlite purge marks: %w", err)
	}
	var got string
	err := s.db.QueryRowContext(ctx, `INSERT INTO marks (key, value, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
		WHERE marks.expires_at <= ?
		RETURNING value`, key, value, sqliteTimeOf(expires), now).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) { // a live mark holds the key
		got, _, err = s.GetMark(ctx, key)
	}
	if err != nil {
		return "", fmt.Errorf("sqlite put mark: %w", err)
	}
	return got, nil
}

// GetMark implements store.Marks.
func (s *Store) GetMark(ctx context.Context, key string) (string, bool, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM marks WHERE key = ? AND expires_at > ?`, key, sqliteTimeOf(s.Now())).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("sqlite get mark: %w", err)
	}
	return v, true, nil
}
