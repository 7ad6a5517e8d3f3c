package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store/sqlstore"
	"github.com/toolrouterd/toolrouterd/internal/store/writebehind"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// ListClientRuns implements store.Tenancy.
func (s *Store) ListClientRuns(ctx context.Context, client, planID string, limit int) ([]*toolrouter.Run, error) {
	if planID == "" {
		return s.listRuns(ctx, `client = ?`, limit, client)
	}
	return s.listRuns(ctx, `client = ? AND plan_id = ?`, limit, client, planID)
}

// AppendAudit implements store.Tenancy: the records are queued for the
// group commit as one write.
func (s *Store) AppendAudit(ctx context.Context, recs []toolrouter.AuditRecord) error {
	if len(recs) == 0 {
		return nil
	}
	if err := s.w.Add(ctx, auditWrites(recs)...); err != nil {
		return fmt.Errorf("sqlite append audit: %w", err)
	}
	return nil
}

// insertAuditSQL inserts one record; the group commit inserts many with
// one statement. OR FAIL, not the default ABORT: a failing row then does
// not undo the statement's earlier rows, so SQLite keeps no statement
// journal (a copy of every page the statement changes) for it; the group
// commit rolls back its whole transaction on any error anyway.
var insertAuditSQL = `INSERT OR FAIL INTO audit (` + sqlstore.AuditColumns[len("id, "):] + `)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// auditWrites are the statements that insert recs.
func auditWrites(recs []toolrouter.AuditRecord) []writebehind.Write {
	return appendAuditWrites(make([]writebehind.Write, 0, len(recs)), recs)
}

// appendAuditWrites appends to ws the statements that insert recs, each
// with its values in one slice, and the upsert of the spend ledger entry
// a record carries (its call's settled cost): in the same write, so the
// same transaction, as the record (docs/costs.md "The ledger").
func appendAuditWrites(ws []writebehind.Write, recs []toolrouter.AuditRecord) []writebehind.Write {
	for i := range recs {
		r := &recs[i]
		args := append(make([]any, 0, auditArgs), sqliteTimeOf(r.Time), r.Client, r.EntryPoint, r.PlanID, sqlstore.AuditSequence(r))
		ws = append(ws, writebehind.Write{SQL: insertAuditSQL, Row: true, Kind: "audit", Args: sqlstore.AppendAuditValues(args, r)})
		if r.Spend != nil {
			ws = append(ws, spendWrite(*r.Spend))
		}
	}
	return ws
}

// settleSpendSQL is the upsert of a settled entry: the group commit's
// rows of one group in one statement, a key's last row only (Key), as
// one ON CONFLICT DO UPDATE applied in order would leave it.
var settleSpendSQL = sqlstore.SpendUpsert(sqlitePH)

// spendWrite is the group commit's upsert of e.
func spendWrite(e toolrouter.SpendEntry) writebehind.Write {
	return writebehind.Write{SQL: settleSpendSQL, Row: true, Key: sqlstore.SpendKeyOf(e.Key()), Kind: "spend", Args: sqlstore.SpendValues(e)}
}

// auditArgs is the number of values of insertAuditSQL.
const auditArgs = 18

// ListAudit implements store.Tenancy; it sees the records this store
// queued (it flushes them first).
func (s *Store) ListAudit(ctx context.Context, f toolrouter.AuditFilter) ([]toolrouter.AuditRecord, error) {
	if err := s.w.Flush(ctx); err != nil {
		return nil, fmt.Errorf("sqlite list audit: %w", err)
	}
	q, args := sqlstore.AuditSelect(f, func(int) string { return "?" }, func(t time.Time) any { return sqliteTimeOf(t) })
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite list audit: %w", err)
	}
	defer rows.Close()
	out := []toolrouter.AuditRecord{}
	for rows.Next() {
		var r toolrouter.AuditRecord
		var at string
		var seq sql.NullInt64
		if err := rows.Scan(sqlstore.AuditDest(&r, &at, &seq)...); err != nil {
			return nil, fmt.Errorf("sqlite list audit: %w", err)
		}
		if r.Time, err = parseSQLiteTime(at); err != nil {
			return nil, err
		}
		if seq.Valid {
			r.Sequence = &seq.Int64
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite list audit: %w", err)
	}
	return out, nil
}

// PurgeAudit implements store.Tenancy: of the limit oldest records (by
// id, the rowid: no index to maintain per route, migration 0040), those
// older than before. Records are appended about in time order, so the
// oldest ids are the expired ones; one among them that is not yet (a short
// call that ended before a longer one that started earlier) stays for a
// later sweep, and the scan never goes past limit rows.
func (s *Store) PurgeAudit(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.execCount(ctx, "purge audit", `DELETE FROM audit WHERE id IN
		(SELECT id FROM (SELECT id, at FROM audit ORDER BY id LIMIT ?) WHERE at < ?)`,
		limit, sqliteTimeOf(before))
}

// TakeRate implements store.Tenancy with one upsert: the counter grows
// only while it stays within quota.
func (s *Store) TakeRate(ctx context.Context, client string, window time.Time, n, quota int) (int, bool, error) {
	var used int
	if n > quota { // never taken: what is counted already
		err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(used), 0) FROM rate_counters WHERE client = ? AND window_start = ?`,
			client, sqliteTimeOf(window)).Scan(&used)
		return used, false, err
	}
	err := s.db.QueryRowContext(ctx, `INSERT INTO rate_counters (client, window_start, used) VALUES (?, ?, ?)
		ON CONFLICT (client, window_start) DO UPDATE SET used = used + excluded.used
		WHERE used + excluded.used <= ?
		RETURNING used`, client, sqliteTimeOf(window), n, quota).Scan(&used)
	if errors.Is(err, sql.ErrNoRows) { // over quota: nothing was written
		err = s.db.QueryRowContext(ctx, `SELECT used FROM rate_counters WHERE client = ? AND window_start = ?`,
			client, sqliteTimeOf(window)).Scan(&used)
		return used, false, err
	}
	if err != nil {
		return 0, false, fmt.Errorf("sqlite take rate: %w", err)
	}
	return used, true, nil
}

// PurgeRates implements store.Tenancy.
func (s *Store) PurgeRates(ctx context.Context, before time.Time) (int, error) {
	return s.execCount(ctx, "purge rate counters", `DELETE FROM rate_counters WHERE window_start < ?`, sqliteTimeOf(before))
}
