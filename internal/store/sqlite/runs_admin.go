package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Heartbeat implements store.RunAdmin: one column of one row.
func (s *Store) Heartbeat(ctx context.Context, runID string, at time.Time) (bool, error) {
	var cancel bool
	err := s.db.QueryRowContext(ctx, `UPDATE runs SET heartbeat_at = ? WHERE run_id = ? AND status = 'running'
		RETURNING cancel_requested`, sqliteTimeOf(at), runID).Scan(&cancel)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sqlite heartbeat: %w", err)
	}
	return cancel, nil
}

// RequestCancel implements store.RunAdmin.
func (s *Store) RequestCancel(ctx context.Context, runID string) (*toolrouter.Run, error) {
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET cancel_requested = 1 WHERE run_id = ? AND status = 'running'`, runID); err != nil {
		return nil, fmt.Errorf("sqlite cancel run: %w", err)
	}
	return s.GetRun(ctx, runID)
}

// DeleteResultsBefore implements store.RunAdmin: one short statement, so
// routes wait for the write lock at most that long. Of the limit oldest
// results by rowid (no created_at index to write per route, migration
// 0041), it deletes those stored before before. Results are inserted about
// in time order (a replayed one keeps its rowid and its created_at), so the
// oldest rowids are the expired ones; one among them that is not yet (saved
// a little later by another process sharing the file, or before the clock
// stepped back) stays for a later sweep, and the scan never goes past limit
// rows, as in PurgeAudit.
func (s *Store) DeleteResultsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := s.w.Flush(ctx); err != nil {
		return 0, fmt.Errorf("sqlite delete results: %w", err)
	}
	return s.execCount(ctx, "delete results", `DELETE FROM route_results WHERE rowid IN
		(SELECT rowid FROM (SELECT rowid, created_at FROM route_results ORDER BY rowid LIMIT ?) WHERE created_at < ?)`,
		limit, sqliteTimeOf(before))
}

// DeleteRunsBefore implements store.RunAdmin.
func (s *Store) DeleteRunsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.execCount(ctx, "delete runs", `DELETE FROM runs WHERE run_id IN
		(SELECT run_id FROM runs WHERE status NOT IN ('running', 'awaiting_approval') AND heartbeat_at < ? ORDER BY heartbeat_at LIMIT ?)`, sqliteTimeOf(before), limit)
}

// TransitionRun implements store.RunAdmin: one conditional UPDATE.
func (s *Store) TransitionRun(ctx context.Context, run *toolrouter.Run, from toolrouter.RunStatus) (bool, error) {
	b, err := toolrouter.EncodeStored(run)
	if err != nil {
		return false, fmt.Errorf("sqlite transition run: %w", err)
	}
	r, err := s.db.ExecContext(ctx, `UPDATE runs SET status = ?, owner = ?, heartbeat_at = ?, body = ?, cancel_requested = 0
		WHERE run_id = ? AND status = ?`, string(run.Status), run.Owner, sqliteTimeOf(run.HeartbeatAt), string(b), run.RunID, string(from))
	if err != nil {
		return false, fmt.Errorf("sqlite transition run: %w", err)
	}
	n, err := r.RowsAffected()
	return n == 1, err
}
