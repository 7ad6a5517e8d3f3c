package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Approvals decides held calls and shows results (approval.Keeper with pin's reviews; docs/approvals.md
// "Approvals").
type Approvals interface {
	Approval(ctx context.Context, id string) (*toolrouter.Approval, error)
	ListApprovals(ctx context.Context, f toolrouter.ApprovalFilter) ([]*toolrouter.Approval, error)
	Decide(ctx context.Context, id string, approve bool, reason string) (*toolrouter.Approval, *toolrouter.Result, error)
	Result(ctx context.Context, toolCallID, owner string) (*toolrouter.Result, error)
}

// approvalPoll is how often a stream waiting for a decision reads the
// store: the decision may come on any replica. A decision made in this
// process wakes the stream at once (DecisionWatcher), so with one the
// store is read only every approvalSlowPoll, for decisions made by
// other replicas.
const (
	approvalPoll     = 250 * time.Millisecond
	approvalSlowPoll = 5 * time.Second
)

// DecisionWatcher wakes a stream waiting for the decision on a held call
// when this process settles it (approval.Keeper).
type DecisionWatcher interface {
	WatchDecision(ctx context.Context, toolCallID string) (<-chan struct{}, func())
}

// decisionRequest is the body of POST /approvals/{id}.
type decisionRequest struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

func (q decisionRequest) Valid(context.Context) map[string]string {
	if q.Decision != "approve" && q.Decision != "deny" {
		return map[string]string{"decision": `must be "approve" or "deny"`}
	}
	return nil
}

// decisionResponse is the answer of POST /approvals/{id}: the decided
// approval and its call's final result.
type decisionResponse struct {
	Approval *toolrouter.Approval `json:"approval"`
	Result   *toolrouter.Result   `json:"result"`
}

func handleListApprovals(ap Approvals) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f := toolrouter.ApprovalFilter{Status: toolrouter.ApprovalStatus(r.URL.Query().Get("status")), RunID: r.URL.Query().Get("run_id")}
		if f.Status != "" && !f.Status.Valid() {
			writeError(w, r, toolrouter.Invalid("status", "status: must be pending, approved, denied or expired"))
			return
		}
		// Pages as GET /audit's: limit (default 100) and next_cursor.
		var err error
		if f.Limit, err = pageLimit(r.URL.Query()); err != nil {
			writeError(w, r, err)
			return
		}
		if v := r.URL.Query().Get("cursor"); v != "" {
			c, err := toolrouter.ParseCursor(v)
			if err != nil {
				writeError(w, r, err)
				return
			}
			f.Before = c
		}
		as, err := ap.ListApprovals(r.Context(), f)
		if err != nil {
			writeError(w, r, err)
			return
		}
		var next *string
		if len(as) == f.Limit {
			last := as[len(as)-1]
			s := toolrouter.Cursor{Time: last.CreatedAt, ID: last.ID}.String()
			next = &s
		}
		encode(w, r, http.StatusOK, map[string]any{"approvals": as, "next_cursor": next})
	}
}

func handleGetApproval(ap Approvals) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a, err := ap.Approval(r.Context(), pathParam(r, "id"))
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, r, http.StatusOK, a)
	}
}

func handleDecide(ap Approvals) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := decode[decisionRequest](r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		a, res, err := ap.Decide(r.Context(), pathParam(r, "id"), req.Decision == "approve", req.Reason)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, r, http.StatusOK, decisionResponse{Approval: a, Result: res})
	}
}

func handleGetResult(ap Approvals) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		res, err := ap.Result(r.Context(), pathParam(r, "tool_call_id"), r.URL.Query().Get("client"))
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, r, http.StatusOK, res)
	}
}

// awaitDecision waits until the result of a held call is no longer
// awaiting approval (or ctx ends, nil) and returns it: woken by a decision
// made in this process, polling the store for one made elsewhere.
func awaitDecision(ctx context.Context, ap Approvals, toolCallID string) *toolrouter.Result {
	poll := approvalPoll
	var decided <-chan struct{}
	if dw, ok := ap.(DecisionWatcher); ok {
		ch, stop := dw.WatchDecision(ctx, toolCallID)
		defer stop()
		decided, poll = ch, approvalSlowPoll
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		// Read first: the decision may have come before the watch began.
		res, err := ap.Result(ctx, toolCallID, "")
		if err == nil && res.Status != toolrouter.ResultAwaitingApproval {
			return res
		}
		select {
		case <-ctx.Done():
			return nil
		case <-decided:
			decided = nil // closed: read once more, then poll
		case <-t.C:
		}
	}
}
