package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolrouterd/toolrouterd/internal/store/sqlstore"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// CreateApproval implements store.Store.
func (p *Store) CreateApproval(ctx context.Context, a *toolrouter.Approval) error {
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("postgres create approval: %w", err)
	}
	if _, err := p.pool.Exec(ctx, `INSERT INTO approvals (approval_id, tool_call_id, status, run_id, client, created_at, expires_at, body)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, a.ID, a.ToolCallID, string(a.Status), a.RunID, a.Client,
		a.CreatedAt, a.ExpiresAt, string(b)); err != nil {
		return fmt.Errorf("postgres create approval: %w", err)
	}
	return nil
}

func scanApproval(row pgx.CollectableRow) (*toolrouter.Approval, error) {
	var body []byte
	if err := row.Scan(&body); err != nil {
		return nil, err
	}
	var a toolrouter.Approval
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// GetApproval implements store.Store.
func (p *Store) GetApproval(ctx context.Context, id string) (*toolrouter.Approval, error) {
	rows, _ := p.pool.Query(ctx, `SELECT body FROM approvals WHERE approval_id = $1`, id)
	a, err := pgx.CollectExactlyOneRow(rows, scanApproval)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "approval %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres get approval: %w", err)
	}
	return a, nil
}

// ListApprovals implements store.Store.
func (p *Store) ListApprovals(ctx context.Context, f toolrouter.ApprovalFilter) ([]*toolrouter.Approval, error) {
	var lim any // NULL: no limit
	if f.Limit > 0 {
		lim = f.Limit
	}
	q, args := sqlstore.ApprovalSelect(f, func(i int) string { return "$" + strconv.Itoa(i) }, func(t time.Time) any { return t })
	rows, _ := p.pool.Query(ctx, q+` LIMIT $`+strconv.Itoa(len(args)+1), append(args, lim)...)
	out, err := pgx.CollectRows(rows, scanApproval)
	if err != nil {
		return nil, fmt.Errorf("postgres list approvals: %w", err)
	}
	if out == nil {
		out = []*toolrouter.Approval{}
	}
	return out, nil
}

// decide writes d over a pending approval with one conditional UPDATE;
// false when another decider came first.
func (p *Store) decide(ctx context.Context, a *toolrouter.Approval, d toolrouter.Decision) (bool, error) {
	a.Apply(d)
	b, err := json.Marshal(a)
	if err != nil {
		return false, err
	}
	tag, err := p.pool.Exec(ctx, `UPDATE approvals SET status = $1, body = $2 WHERE approval_id = $3 AND status = 'pending'`,
		string(a.Status), string(b), a.ID)
	return tag.RowsAffected() == 1, err
}

// DecideApproval implements store.Store.
func (p *Store) DecideApproval(ctx context.Context, id string, d toolrouter.Decision) (*toolrouter.Approval, error) {
	return sqlstore.DecideApproval(ctx, "postgres", id, d, p.GetApproval, p.decide)
}

// ExpireApprovals implements store.Store.
func (p *Store) ExpireApprovals(ctx context.Context, now time.Time) ([]*toolrouter.Approval, error) {
	rows, _ := p.pool.Query(ctx, `SELECT body FROM approvals WHERE status = 'pending' AND expires_at <= $1`, now)
	due, err := pgx.CollectRows(rows, scanApproval)
	if err != nil {
		return nil, fmt.Errorf("postgres expire approvals: %w", err)
	}
	return sqlstore.ExpireApprovals(ctx, "postgres", due, now, p.decide)
}

// CountPendingApprovals implements store.Store.
func (p *Store) CountPendingApprovals(ctx context.Context, client string) (int, error) {
	var n int
	if err := p.pool.QueryRow(ctx, `SELECT count(*) FROM approvals WHERE status = 'pending' AND client = $1`, client).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres count pending approvals: %w", err)
	}
	return n, nil
}

// PurgeApprovals implements store.Store.
func (p *Store) PurgeApprovals(ctx context.Context, before time.Time, limit int) (int, error) {
	tag, err := p.pool.Exec(ctx, `DELETE FROM approvals WHERE approval_id IN
		(SELECT approval_id FROM approvals WHERE status <> 'pending' AND created_at < $1 ORDER BY created_at LIMIT $2
		 FOR UPDATE SKIP LOCKED)`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("postgres purge approvals: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
