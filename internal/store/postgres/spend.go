package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolrouterd/toolrouterd/internal/store/sqlstore"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

func pgPH(i int) string { return "$" + strconv.Itoa(i) }

// ReserveSpend implements store.Spend: in one transaction, a transaction
// advisory lock per client and virtual server checked (taken in key order,
// so two reservations never wait on each other in a circle), the sums,
// and the insert. Every replica reserving for the same client waits on
// the same lock, so the sums each sees include every reservation committed
// before it: the checks are exact for the amounts reserved. The sums see
// the settled entries this replica queued with results (it flushes them
// first).
func (p *Store) ReserveSpend(ctx context.Context, e toolrouter.SpendEntry, checks []toolrouter.SpendCheck) (int, error) {
	if err := p.w.Flush(ctx); err != nil {
		return 0, fmt.Errorf("postgres reserve spend: %w", err)
	}
	var locks []string
	for _, c := range checks {
		locks = append(locks, "toolrouterd spend\x1f"+c.Counter.Scope+"\x1f"+c.Counter.Name)
	}
	slices.Sort(locks)
	locks = slices.Compact(locks)
	refused := -1
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		refused = -1
		for _, k := range locks {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, k); err != nil {
				return err
			}
		}
		for i, c := range checks {
			q, args := sqlstore.SpentSQL(c.Counter, pgPH)
			var spent int64
			if err := tx.QueryRow(ctx, q, args...).Scan(&spent); err != nil {
				return err
			}
			if c.Refuses(toolrouter.Micros(spent)) {
				refused = i
				return nil
			}
		}
		_, err := tx.Exec(ctx, sqlstore.SpendInsert(pgPH), sqlstore.SpendValues(e)...)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres reserve spend: %w", err)
	}
	return refused, nil
}

// SettleSpend implements store.Spend: one write of its own (a model
// turn's); a tool call's entry is written with its result (auditWrites).
func (p *Store) SettleSpend(ctx context.Context, e toolrouter.SpendEntry) error {
	if _, err := p.pool.Exec(ctx, sqlstore.SpendUpsert(pgPH), sqlstore.SpendValues(e)...); err != nil {
		return fmt.Errorf("postgres settle spend: %w", err)
	}
	return nil
}

// DropSpend implements store.Spend.
func (p *Store) DropSpend(ctx context.Context, k toolrouter.SpendKey) error {
	if _, err := p.pool.Exec(ctx, `DELETE FROM spend WHERE at_us = $1 AND id = $2`, k.At.UnixMicro(), k.ID); err != nil {
		return fmt.Errorf("postgres drop spend: %w", err)
	}
	return nil
}

// Usage implements store.Spend; it sees the entries this replica queued
// (it flushes them first).
func (p *Store) Usage(ctx context.Context, f toolrouter.UsageFilter) ([]toolrouter.UsageRow, error) {
	if err := p.w.Flush(ctx); err != nil {
		return nil, fmt.Errorf("postgres usage: %w", err)
	}
	q, args, err := sqlstore.UsageSelect(f, pgPH)
	if err != nil {
		return nil, err
	}
	rows, err := p.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres usage: %w", err)
	}
	defer rows.Close()
	out := []toolrouter.UsageRow{}
	for rows.Next() {
		var r toolrouter.UsageRow
		var amount int64
		if err := rows.Scan(&r.Key, &r.Currency, &amount, &r.Calls, &r.UnpricedCalls, &r.InputTokens, &r.OutputTokens, &r.CachedInputTokens); err != nil {
			return nil, fmt.Errorf("postgres usage: %w", err)
		}
		r.Amount = toolrouter.Micros(amount)
		out = append(out, r)
	}
	return out, rows.Err()
}

// Costs implements store.Spend; it sees the entries this replica queued
// (it flushes them first).
func (p *Store) Costs(ctx context.Context, keys []toolrouter.SpendKey) (map[string]toolrouter.Cost, error) {
	out := map[string]toolrouter.Cost{}
	if len(keys) == 0 {
		return out, nil
	}
	if err := p.w.Flush(ctx); err != nil {
		return nil, fmt.Errorf("postgres costs: %w", err)
	}
	ats, ids := make([]int64, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		ats[i], ids[i] = k.At.UnixMicro(), k.ID
	}
	rows, err := p.pool.Query(ctx, `SELECT s.id, s.currency, s.amount, s.unpriced, s.model, s.input_tokens, s.output_tokens, s.cached_tokens
		FROM unnest($1::bigint[], $2::text[]) AS k(at_us, id) JOIN spend s ON s.at_us = k.at_us AND s.id = k.id`, ats, ids)
	if err != nil {
		return nil, fmt.Errorf("postgres costs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, cur, model string
		var amount, unpriced, in, outT, cached int64
		if err := rows.Scan(&id, &cur, &amount, &unpriced, &model, &in, &outT, &cached); err != nil {
			return nil, fmt.Errorf("postgres costs: %w", err)
		}
		out[id] = sqlstore.CostOf(cur, amount, unpriced, model, in, outT, cached)
	}
	return out, rows.Err()
}

// PurgeSpend implements store.Spend.
func (p *Store) PurgeSpend(ctx context.Context, before time.Time, limit int) (int, error) {
	tag, err := p.pool.Exec(ctx, `DELETE FROM spend WHERE (at_us, id) IN
		(SELECT at_us, id FROM spend WHERE at_us < $1 ORDER BY at_us LIMIT $2)`, before.UTC().UnixMicro(), limit)
	if err != nil {
		return 0, fmt.Errorf("postgres purge spend: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
