package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// PutMark implements store.Marks: one upsert that replaces only an expired
// mark, after deleting (a bounded number of) expired ones.
func (p *Store) PutMark(ctx context.Context, key, value string, expires time.Time) (string, error) {
	now := p.now()
	if _, err := p.pool.Exec(ctx, `DELETE FROM marks WHERE key IN (SELECT key FROM marks WHERE expires_at <= $1 LIMIT 100)`, now); err != nil {
		return "", fmt.Errorf("postgres purge marks: %w", err)
	}
	var got string
	err := p.pool.QueryRow(ctx, `INSERT INTO marks (key, value, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
		WHERE marks.expires_at <= $4
		RETURNING value`, key, value, expires, now).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) { // a live mark holds the key
		got, _, err = p.GetMark(ctx, key)
	}
	if err != nil {
		return "", fmt.Errorf("postgres put mark: %w", err)
	}
	return got, nil
}

// GetMark implements store.Marks.
func (p *Store) GetMark(ctx context.Context, key string) (string, bool, error) {
	var v string
	err := p.pool.QueryRow(ctx, `SELECT value FROM marks WHERE key = $1 AND expires_at > $2`, key, p.now()).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("postgres get mark: %w", err)
	}
	return v, true, nil
}
