package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store/sqlstore"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// CreateApproval implements store.Store.
func (s *Store) CreateApproval(ctx context.Context, a *toolrouter.Approval) error {
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("sqlite create approval: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO approvals (approval_id, tool_call_id, status, run_id, client, created_at, expires_at, body)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, a.ID, a.ToolCallID, string(a.Status), a.RunID, a.Client,
		sqliteTimeOf(a.CreatedAt), sqliteTimeOf(a.ExpiresAt), string(b)); err != nil {
		return fmt.Errorf("sqlite create approval: %w", err)
	}
	return nil
}

func decodeApproval(body string) (*toolrouter.Approval, error) {
	var a toolrouter.Approval
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// GetApproval implements store.Store.
func (s *Store) GetApproval(ctx context.Context, id string) (*toolrouter.Approval, error) {
	var body string
	err := s.db.QueryRowContext(ctx, `SELECT body FROM approvals WHERE approval_id = ?`, id).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "approval %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite get approval: %w", err)
	}
	return decodeApproval(body)
}

// ListApprovals implements store.Store.
func (s *Store) ListApprovals(ctx context.Context, f toolrouter.ApprovalFilter) ([]*toolrouter.Approval, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = -1
	}
	q, args := sqlstore.ApprovalSelect(f, func(int) string { return "?" }, func(t time.Time) any { return sqliteTimeOf(t) })
	return s.approvals(ctx, q+` LIMIT ?`, append(args, limit)...)
}

// CountPendingApprovals implements store.Store.
func (s *Store) CountPendingApprovals(ctx context.Context, client string) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM approvals WHERE status = 'pending' AND client = ?`, client).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite count pending approvals: %w", err)
	}
	return n, nil
}

// PurgeApprovals implements store.Store.
func (s *Store) PurgeApprovals(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.execCount(ctx, "purge approvals", `DELETE FROM approvals WHERE approval_id IN
		(SELECT approval_id FROM approvals WHERE status <> 'pending' AND created_at < ? ORDER BY created_at LIMIT ?)`,
		sqliteTimeOf(before), limit)
}

func (s *Store) approvals(ctx context.Context, query string, args ...any) ([]*toolrouter.Approval, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite list approvals: %w", err)
	}
	defer rows.Close()
	out := []*toolrouter.Approval{}
	for rows.Next() {
		var body string
		if err := rows.Scan(&body); err != nil {
			return nil, fmt.Errorf("sqlite list approvals: %w", err)
		}
		a, err := decodeApproval(body)
		if err != nil {
			return nil, fmt.Errorf("sqlite list approvals: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// decide writes d over a pending approval with one conditional UPDATE;
// false when another decider came first.
func (s *Store) decide(ctx context.Context, a *toolrouter.Approval, d toolrouter.Decision) (bool, error) {
	a.Apply(d)
	b, err := json.Marshal(a)
	if err != nil {
		return false, err
	}
	r, err := s.db.ExecContext(ctx, `UPDATE approvals SET status = ?, body = ? WHERE approval_id = ? AND status = 'pending'`,
		string(a.Status), string(b), a.ID)
	if err != nil {
		return false, err
	}
	n, err := r.RowsAffected()
	return n == 1, err
}

// DecideApproval implements store.Store.
func (s *Store) DecideApproval(ctx context.Context, id string, d toolrouter.Decision) (*toolrouter.Approval, error) {
	return sqlstore.DecideApproval(ctx, "sqlite", id, d, s.GetApproval, s.decide)
}

// ExpireApprovals implements store.Store.
func (s *Store) ExpireApprovals(ctx context.Context, now time.Time) ([]*toolrouter.Approval, error) {
	due, err := s.approvals(ctx, `SELECT body FROM approvals WHERE status = 'pending' AND expires_at <= ?`, sqliteTimeOf(now))
	if err != nil {
		return nil, err
	}
	return sqlstore.ExpireApprovals(ctx, "sqlite", due, now, s.decide)
}
