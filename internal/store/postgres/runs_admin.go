package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Heartbeat implements store.RunAdmin: one column of one row.
func (p *Store) Heartbeat(ctx context.Context, runID string, at time.Time) (bool, error) {
	var cancel bool
	err := p.pool.QueryRow(ctx, `UPDATE runs SET heartbeat_at = $2 WHERE run_id = $1 AND status = 'running'
		RETURNING cancel_requested`, runID, at).Scan(&cancel)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("postgres heartbeat: %w", err)
	}
	return cancel, nil
}

// RequestCancel implements store.RunAdmin.
func (p *Store) RequestCancel(ctx context.Context, runID string) (*toolrouter.Run, error) {
	if _, err := p.pool.Exec(ctx, `UPDATE runs SET cancel_requested = true WHERE run_id = $1 AND status = 'running'`, runID); err != nil {
		return nil, fmt.Errorf("postgres cancel run: %w", err)
	}
	return p.GetRun(ctx, runID)
}

// DeleteResultsBefore implements store.RunAdmin: one short statement on the
// created_at index; the rows it takes are locked only for that statement.
func (p *Store) DeleteResultsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := p.w.Flush(ctx); err != nil {
		return 0, fmt.Errorf("postgres delete results: %w", err)
	}
	tag, err := p.pool.Exec(ctx, `DELETE FROM route_results WHERE tool_call_id IN
		(SELECT tool_call_id FROM route_results WHERE created_at < $1 ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("postgres delete results: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// DeleteRunsBefore implements store.RunAdmin.
func (p *Store) DeleteRunsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	tag, err := p.pool.Exec(ctx, `DELETE FROM runs WHERE run_id IN
		(SELECT run_id FROM runs WHERE status NOT IN ('running', 'awaiting_approval') AND heartbeat_at < $1 ORDER BY heartbeat_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("postgres delete runs: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// TransitionRun implements store.RunAdmin: one conditional UPDATE.
func (p *Store) TransitionRun(ctx context.Context, run *toolrouter.Run, from toolrouter.RunStatus) (bool, error) {
	b, err := toolrouter.EncodeStored(run)
	if err != nil {
		return false, fmt.Errorf("postgres transition run: %w", err)
	}
	tag, err := p.pool.Exec(ctx, `UPDATE runs SET status = $2, owner = $3, heartbeat_at = $4, body = $5, cancel_requested = false
		WHERE run_id = $1 AND status = $6`, run.RunID, string(run.Status), run.Owner, run.HeartbeatAt, string(b), string(from))
	if err != nil {
		return false, fmt.Errorf("postgres transition run: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}
