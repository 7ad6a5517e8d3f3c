package sqlstore

import (
	"context"
	"fmt"
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
