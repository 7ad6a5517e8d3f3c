package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store/sqlstore"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

func sqlitePH(int) string { return "?" }

// ReserveSpend implements store.Spend in one immediate transaction: the
// write lock, taken first, makes the sums and the insert one step for
// every process on the file. The sums see the entries this store queued
// with results (it flushes them first).
func (s *Store) ReserveSpend(ctx context.Context, e toolrouter.SpendEntry, checks []toolrouter.SpendCheck) (int, error) {
	if err := s.w.Flush(ctx); err != nil {
		return 0, fmt.Errorf("sqlite reserve spend: %w", err)
	}
	refused := -1
	err := s.tx(ctx, func(tx *sql.Tx) error {
		refused = -1
		for i, c := range checks {
			q, args := sqlstore.SpentSQL(c.Counter, sqlitePH)
			var spent int64
			if err := tx.QueryRowContext(ctx, q, args...).Scan(&spent); err != nil {
				return err
			}
			if c.Refuses(toolrouter.Micros(spent)) {
				refused = i
				return nil
			}
		}
		_, err := tx.ExecContext(ctx, sqlstore.SpendInsert(sqlitePH), sqlstore.SpendValues(e)...)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite reserve spend: %w", err)
	}
	return refused, nil
}

// SettleSpend implements store.Spend: one write of its own (a model
// turn's); a tool call's entry is written with its result
// (appendAuditWrites).
func (s *Store) SettleSpend(ctx context.Context, e toolrouter.SpendEntry) error {
	if _, err := s.db.ExecContext(ctx, sqlstore.SpendUpsert(sqlitePH), sqlstore.SpendValues(e)...); err != nil {
		return fmt.Errorf("sqlite settle spend: %w", err)
	}
	return nil
}

// DropSpend implements store.Spend.
func (s *Store) DropSpend(ctx context.Context, k toolrouter.SpendKey) error {
	_, err := s.execCount(ctx, "drop spend", `DELETE FROM spend WHERE at_us = ? AND id = ?`, k.At.UnixMicro(), k.ID)
	return err
}

// Usage implements store.Spend; it sees the entries this store queued
// (it flushes them first).
func (s *Store) Usage(ctx context.Context, f toolrouter.UsageFilter) ([]toolrouter.UsageRow, error) {
	if err := s.w.Flush(ctx); err != nil {
		return nil, fmt.Errorf("sqlite usage: %w", err)
	}
	q, args, err := sqlstore.UsageSelect(f, sqlitePH)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite usage: %w", err)
	}
	defer rows.Close()
	out := []toolrouter.UsageRow{}
	for rows.Next() {
		var r toolrouter.UsageRow
		if err := rows.Scan(sqlstore.UsageDest(&r)...); err != nil {
			return nil, fmt.Errorf("sqlite usage: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Costs implements store.Spend; it sees the entries this store queued
// (it flushes them first).
func (s *Store) Costs(ctx context.Context, keys []toolrouter.SpendKey) (map[string]toolrouter.Cost, error) {
	out := map[string]toolrouter.Cost{}
	if len(keys) == 0 {
		return out, nil
	}
	if err := s.w.Flush(ctx); err != nil {
		return nil, fmt.Errorf("sqlite costs: %w", err)
	}
	q, args := sqlstore.SpendByKeys(keys, sqlitePH)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite costs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, cur, model string
		var amount, unpriced, in, outT, cached sql.NullInt64
		if err := rows.Scan(&id, &cur, &amount, &unpriced, &model, &in, &outT, &cached); err != nil {
			return nil, fmt.Errorf("sqlite costs: %w", err)
		}
		out[id] = sqlstore.CostOf(cur, amount.Int64, unpriced.Int64, model, in.Int64, outT.Int64, cached.Int64)
	}
	return out, rows.Err()
}

// PurgeSpend implements store.Spend.
func (s *Store) PurgeSpend(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.execCount(ctx, "purge spend", `DELETE FROM spend WHERE (at_us, id) IN
		(SELECT at_us, id FROM spend WHERE at_us < ? ORDER BY at_us LIMIT ?)`, before.UTC().UnixMicro(), limit)
}
