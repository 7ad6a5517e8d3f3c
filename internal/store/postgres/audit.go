package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolrouterd/toolrouterd/internal/store/sqlstore"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// ListClientRuns implements store.Tenancy.
func (p *Store) ListClientRuns(ctx context.Context, client, planID string, limit int) ([]*toolrouter.Run, error) {
	if planID == "" {
		return p.listRuns(ctx, `client = $1`, limit, client)
	}
	return p.listRuns(ctx, `client = $1 AND plan_id = $2`, limit, client, planID)
}

// AppendAudit implements store.Tenancy: the records are queued for the
// group commit as one write.
func (p *Store) AppendAudit(ctx context.Context, recs []toolrouter.AuditRecord) error {
	if len(recs) == 0 {
		return nil
	}
	if err := p.w.Add(ctx, auditWrites(recs)...); err != nil {
		return fmt.Errorf("postgres append audit: %w", err)
	}
	return nil
}

// ListAudit implements store.Tenancy; it sees the records this store
// queued (it flushes them first).
func (p *Store) ListAudit(ctx context.Context, f toolrouter.AuditFilter) ([]toolrouter.AuditRecord, error) {
	if err := p.w.Flush(ctx); err != nil {
		return nil, fmt.Errorf("postgres list audit: %w", err)
	}
	q, args := sqlstore.AuditSelect(f, func(i int) string { return "$" + strconv.Itoa(i) }, func(t time.Time) any { return t })
	rows, _ := p.pool.Query(ctx, q, args...)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (toolrouter.AuditRecord, error) {
		var r toolrouter.AuditRecord
		err := row.Scan(sqlstore.AuditDest(&r, &r.Time, &r.Sequence)...)
		r.Time = r.Time.UTC()
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres list audit: %w", err)
	}
	if out == nil {
		out = []toolrouter.AuditRecord{}
	}
	return out, nil
}

// PurgeAudit implements store.Tenancy.
func (p *Store) PurgeAudit(ctx context.Context, before time.Time, limit int) (int, error) {
	tag, err := p.pool.Exec(ctx, `DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < $1 ORDER BY at LIMIT $2)`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("postgres purge audit: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// TakeRate implements store.Tenancy with one upsert shared by every
// replica: the counter grows only while it stays within quota.
func (p *Store) TakeRate(ctx context.Context, client string, window time.Time, n, quota int) (int, bool, error) {
	var used int
	if n <= quota {
		err := p.pool.QueryRow(ctx, `INSERT INTO rate_counters (client, window_start, used) VALUES ($1, $2, $3)
			ON CONFLICT (client, window_start) DO UPDATE SET used = rate_counters.used + excluded.used
			WHERE rate_counters.used + excluded.used <= $4
			RETURNING used`, client, window, n, quota).Scan(&used)
		if err == nil {
			return used, true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return 0, false, fmt.Errorf("postgres take rate: %w", err)
		}
	}
	// Over quota: nothing was written; say what is counted.
	err := p.pool.QueryRow(ctx, `SELECT coalesce(max(used), 0) FROM rate_counters WHERE client = $1 AND window_start = $2`,
		client, window).Scan(&used)
	if err != nil {
		return 0, false, fmt.Errorf("postgres take rate: %w", err)
	}
	return used, false, nil
}

// PurgeRates implements store.Tenancy.
func (p *Store) PurgeRates(ctx context.Context, before time.Time) (int, error) {
	tag, err := p.pool.Exec(ctx, `DELETE FROM rate_counters WHERE window_start < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("postgres purge rate counters: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
