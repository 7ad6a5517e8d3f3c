package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Decide writes d over a pending approval with one conditional UPDATE;
// false when another decider came first.
type Decide func(ctx context.Context, a *toolrouter.Approval, d toolrouter.Decision) (bool, error)

// DecideApproval implements store.Store's DecideApproval over get and
// decide: it retries while another decider wins the race, so
// toolrouter.CheckDecision says by whom. backend names the store in errors.
func DecideApproval(ctx context.Context, backend, id string, d toolrouter.Decision,
	get func(context.Context, string) (*toolrouter.Approval, error), decide Decide) (*toolrouter.Approval, error) {
	for {
		a, err := get(ctx, id)
		if err != nil {
			return nil, err
		}
		if err := toolrouter.CheckDecision(a, d); err != nil {
			return nil, err
		}
		ok, err := decide(ctx, a, d)
		if err != nil {
			return nil, fmt.Errorf("%s decide approval: %w", backend, err)
		}
		if ok {
			return a, nil
		}
		// Decided meanwhile: read it again, CheckDecision says by whom.
	}
}

// ApprovalSelect is the query of the approvals f selects (Limit aside:
// the caller appends it), newest first by created_at, then id: only the
// conditions f sets, so the store uses the index that serves them
// (client, created_at, approval_id for a client's list). ph writes the
// i-th placeholder (1-based), at converts a time to its column value.
func ApprovalSelect(f toolrouter.ApprovalFilter, ph func(int) string, at func(time.Time) any) (string, []any) {
	var where []string
	var args []any
	add := func(cond string, vs ...any) {
		for _, v := range vs {
			args = append(args, v)
			cond = strings.Replace(cond, "?", ph(len(args)), 1)
		}
		where = append(where, cond)
	}
	if f.Status != "" {
		add("status = ?", string(f.Status))
	}
	if f.RunID != "" {
		add("run_id = ?", f.RunID)
	}
	if f.Client != "" {
		add("client = ?", f.Client)
	}
	if !f.Before.IsZero() {
		add("(created_at, approval_id) < (?, ?)", at(f.Before.Time), f.Before.ID)
	}
	q := "SELECT body FROM approvals"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return q + " ORDER BY created_at DESC, approval_id DESC", args
}

// ExpireApprovals expires the due pending approvals and returns those this
// call expired (not those another decider came first to). backend names
// the store in errors.
func ExpireApprovals(ctx context.Context, backend string, due []*toolrouter.Approval, now time.Time, decide Decide) ([]*toolrouter.Approval, error) {
	var out []*toolrouter.Approval
	for _, a := range due {
		ok, err := decide(ctx, a, toolrouter.Decision{Status: toolrouter.ApprovalExpired, Reason: "approval expired", At: now})
		if err != nil {
			return nil, fmt.Errorf("%s expire approvals: %w", backend, err)
		}
		if ok {
			out = append(out, a)
		}
	}
	return out, nil
}
