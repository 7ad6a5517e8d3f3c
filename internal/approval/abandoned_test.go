package approval_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// countExec counts the calls it gets; an abandoned call must get none.
type countExec struct{ n int }

func (c *countExec) Call(context.Context, toolrouter.ExecRequest) toolrouter.Outcome {
	c.n++
	return toolrouter.Outcome{Output: []byte(`{}`), Answered: true}
}

// approved stores an approval of tool, decided approved at at, and its
// call's result with the given status.
func approved(t *testing.T, st *memory.Store, id, tool, status string, at time.Time) {
	t.Helper()
	ctx := context.Background()
	args, sum, err := toolrouter.CanonicalArguments(map[string]any{"x": 1.0})
	if err != nil {
		t.Fatal(err)
	}
	res := &toolrouter.Result{ToolCallID: "tc_" + id, PlanID: "p1", ToolName: tool, Status: status, ApprovalID: "ap_" + id}
	if err := st.SaveResult(ctx, res); err != nil {
		t.Fatal(err)
	}
	a := &toolrouter.Approval{ID: "ap_" + id, Status: toolrouter.ApprovalPending, ToolCallID: "tc_" + id, PlanID: "p1",
		ToolName: tool, Arguments: args, ArgumentsSHA256: sum, RunID: "run_" + id,
		CreatedAt: at.Add(-time.Minute), ExpiresAt: at.Add(time.Hour)}
	if err := st.CreateApproval(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DecideApproval(ctx, a.ID, toolrouter.Decision{Status: toolrouter.ApprovalApproved, By: "alice", At: at}); err != nil {
		t.Fatal(err)
	}
}

// An approved call whose result still awaits past its grace (the tool's
// timeout per attempt and a minute) is failed, not run again, and its run
// resumes; before the grace, or once final, it is left alone (docs/approvals.md
// "Approvals").
func TestSettleAbandonedApproval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memory.New()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	approved(t, st, "1", "slow", toolrouter.ResultAwaitingApproval, t0)
	approved(t, st, "2", "slow", toolrouter.ResultComplete, t0)
	approved(t, st, "3", "gone", toolrouter.ResultAwaitingApproval, t0)
	exec := &countExec{}
	now := t0
	var settled []string
	r := &rig{
		Tools: func() pipeline.Tools {
			return toolMap{"slow": {Name: "slow", Timeout: 2 * time.Second, Retries: 1}}
		},
		Exec: exec, Seq: st, Results: st, Approvals: st,
		Now:     func() time.Time { return now },
		Settled: func(_ context.Context, runID string) { settled = append(settled, runID) },
	}
	status := func(id string) *toolrouter.Result {
		t.Helper()
		res, err := st.GetResult(ctx, "tc_"+id)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	// slow's grace: 2s × 2 attempts + 1m = 64s.
	now = t0.Add(63 * time.Second)
	if n, err := r.SettleAbandoned(ctx); err != nil || n != 0 {
		t.Fatalf("within the grace: settled %d, %v", n, err)
	}
	if res := status("1"); res.Status != toolrouter.ResultAwaitingApproval {
		t.Fatalf("within the grace the result is %q", res.Status)
	}

	now = t0.Add(65 * time.Second)
	if n, err := r.SettleAbandoned(ctx); err != nil || n != 1 {
		t.Fatalf("past the grace: settled %d, %v", n, err)
	}
	res := status("1")
	if res.Status != toolrouter.ResultComplete || res.Success || res.ErrorCategory == nil ||
		*res.ErrorCategory != toolrouter.CategoryExecution || res.Error == nil ||
		*res.Error != "the replica running this approved call stopped; the tool may have run — not run again" {
		t.Fatalf("abandoned result: %s", resultJSON(t, res))
	}
	if res := status("2"); res.Status != toolrouter.ResultComplete || res.Error != nil {
		t.Fatalf("a final result was changed: %s", resultJSON(t, res))
	}
	if res := status("3"); res.Status != toolrouter.ResultAwaitingApproval {
		t.Fatalf("a gone tool's call was settled before its 10m bound: %q", res.Status)
	}
	if len(settled) != 1 || settled[0] != "run_1" {
		t.Fatalf("runs told: %v", settled)
	}

	now = t0.Add(10*time.Minute + time.Second)
	if n, err := r.SettleAbandoned(ctx); err != nil || n != 1 {
		t.Fatalf("gone tool past its bound: settled %d, %v", n, err)
	}
	if res := status("3"); res.ErrorCategory == nil || *res.ErrorCategory != toolrouter.CategoryExecution {
		t.Fatalf("gone tool's result: %s", resultJSON(t, res))
	}
	if exec.n != 0 {
		t.Fatalf("the tool was called %d times", exec.n)
	}
	if len(settled) != 2 {
		t.Fatalf("runs told: %v", settled)
	}
}
