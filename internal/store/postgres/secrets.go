package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

const secretColumns = `kind, key, owner, label, sealed, expires_at, updated_at`

func scanSecret(row pgx.Row) (*toolrouter.SealedSecret, error) {
	var s toolrouter.SealedSecret
	var expires *time.Time
	if err := row.Scan(&s.Kind, &s.Key, &s.Owner, &s.Label, &s.Sealed, &expires, &s.UpdatedAt); err != nil {
		return nil, err
	}
	if expires != nil {
		s.ExpiresAt = expires.UTC()
	}
	s.UpdatedAt = s.UpdatedAt.UTC()
	return &s, nil
}

// PutSecret implements store.Secrets.
func (p *Store) PutSecret(ctx context.Context, sec *toolrouter.SealedSecret) error {
	now := p.now()
	if _, err := p.pool.Exec(ctx, `DELETE FROM vault WHERE (kind, key) IN (SELECT kind, key FROM vault WHERE expires_at <= $1 LIMIT 100)`, now); err != nil {
		return fmt.Errorf("postgres purge vault: %w", err)
	}
	var expires *time.Time
	if !sec.ExpiresAt.IsZero() {
		expires = &sec.ExpiresAt
	}
	if _, err := p.pool.Exec(ctx, `INSERT INTO vault (`+secretColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (kind, key) DO UPDATE SET owner = excluded.owner, label = excluded.label, sealed = excluded.sealed,
		expires_at = excluded.expires_at, updated_at = excluded.updated_at`,
		sec.Kind, sec.Key, sec.Owner, sec.Label, sec.Sealed, expires, now); err != nil {
		return fmt.Errorf("postgres put secret: %w", err)
	}
	return nil
}

func (p *Store) oneSecret(ctx context.Context, what, q, kind, key string) (*toolrouter.SealedSecret, error) {
	sec, err := scanSecret(p.pool.QueryRow(ctx, q, kind, key, p.now()))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "secret not found")
	}
	if err != nil {
		return nil, fmt.Errorf("postgres %s secret: %w", what, err)
	}
	return sec, nil
}

// GetSecret implements store.Secrets.
func (p *Store) GetSecret(ctx context.Context, kind, key string) (*toolrouter.SealedSecret, error) {
	return p.oneSecret(ctx, "get", `SELECT `+secretColumns+` FROM vault WHERE kind = $1 AND key = $2 AND (expires_at IS NULL OR expires_at > $3)`, kind, key)
}

// TakeSecret implements store.Secrets.
func (p *Store) TakeSecret(ctx context.Context, kind, key string) (*toolrouter.SealedSecret, error) {
	return p.oneSecret(ctx, "take", `DELETE FROM vault WHERE kind = $1 AND key = $2 AND (expires_at IS NULL OR expires_at > $3) RETURNING `+secretColumns, kind, key)
}

// ListSecrets implements store.Secrets.
func (p *Store) ListSecrets(ctx context.Context, kind, owner string) ([]*toolrouter.SealedSecret, error) {
	rows, _ := p.pool.Query(ctx, `SELECT `+secretColumns+` FROM vault WHERE kind = $1 AND owner = $2 AND (expires_at IS NULL OR expires_at > $3) ORDER BY key`,
		kind, owner, p.now())
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*toolrouter.SealedSecret, error) { return scanSecret(row) })
	if err != nil {
		return nil, fmt.Errorf("postgres list secrets: %w", err)
	}
	return out, nil
}

// DeleteSecret implements store.Secrets.
func (p *Store) DeleteSecret(ctx context.Context, kind, key string) (bool, error) {
	tag, err := p.pool.Exec(ctx, `DELETE FROM vault WHERE kind = $1 AND key = $2 AND (expires_at IS NULL OR expires_at > $3)`, kind, key, p.now())
	if err != nil {
		return false, fmt.Errorf("postgres delete secret: %w", err)
	}
	return tag.RowsAffected() > 0, nil
}
