package approval_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestWatchDecisionWokenBySettling: a watcher of a held call hears of its
// decision made by this router at once (issue 21 item 5), and a watcher
// that stopped leaves nothing behind.
func TestWatchDecisionWokenBySettling(t *testing.T) {
	reg, err := registry.Parse("t.yaml", []byte("tools:\n  - {name: pay, endpoint: 'http://127.0.0.1:9/pay', approval: required}\n"), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	rt := &rig{Tools: func() pipeline.Tools { return reg }, Seq: st, Results: st, Approvals: st}
	ctx := context.Background()
	hold := func() *toolrouter.Result {
		t.Helper()
		res, err := rt.Route(ctx, "p", map[string]any{"name": "pay", "arguments": "{}"}, nil)
		if err != nil || res.Status != toolrouter.ResultAwaitingApproval {
			t.Fatalf("route: %+v %v", res, err)
		}
		return res
	}
	res := hold()
	ch, stop := rt.WatchDecision(ctx, res.ToolCallID)
	defer stop()
	select {
	case <-ch:
		t.Fatal("woken before the decision")
	default:
	}
	if _, _, err := rt.Decide(ctx, res.ApprovalID, false, "no"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("the decision did not wake the watcher")
	}
	// Another call: its watcher stops, then it is decided: no panic, no
	// wake of a later watcher of another call.
	other := hold()
	_, stopOther := rt.WatchDecision(ctx, other.ToolCallID)
	stopOther()
	third := hold()
	ch3, stop3 := rt.WatchDecision(ctx, third.ToolCallID)
	defer stop3()
	if _, _, err := rt.Decide(ctx, other.ApprovalID, false, ""); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch3:
		t.Error("another call's decision woke this watcher")
	default:
	}
}

// TestDecidedCallAuditedAsCalled: a held call's audit record, written
// when it is decided in another request, names the entry point it came
// through and the name it was called by (kept with the approval); an
// approval stored before they were kept still settles, audited with the
// deciding request's entry point and the tool's name.
func TestDecidedCallAuditedAsCalled(t *testing.T) {
	t.Parallel()
	st := memory.New()
	aud := &recordingAudit{Save: true}
	rt := &rig{Tools: func() pipeline.Tools { return toolMap{"pay": {Name: "pay", Approval: true}} },
		Exec: &countExec{}, Seq: st, Results: st, Approvals: st, Audit: aud}
	ctx := context.Background()
	last := func(id string) toolrouter.AuditRecord {
		t.Helper()
		if n := len(aud.Recs); n == 0 || aud.Recs[n-1].ToolCallID != id {
			t.Fatalf("no audit record of %s last: %+v", id, aud.Recs)
		}
		return aud.Recs[len(aud.Recs)-1]
	}

	res, err := rt.Route(withEntry(ctx, toolrouter.EntryMCP), "p", map[string]any{"name": "pay", "arguments": "{}"}, nil)
	if err != nil || res.Status != toolrouter.ResultAwaitingApproval {
		t.Fatalf("route: %+v %v", res, err)
	}
	if a, err := st.GetApproval(ctx, res.ApprovalID); err != nil || a.EntryPoint != toolrouter.EntryMCP || a.CalledAs != "pay" {
		t.Fatalf("stored approval: %+v %v", a, err)
	}
	if _, _, err := rt.Decide(ctx, res.ApprovalID, true, ""); err != nil {
		t.Fatal(err)
	}
	if rec := last(res.ToolCallID); rec.EntryPoint != toolrouter.EntryMCP || rec.ToolName != "pay" || rec.Outcome != toolrouter.AuditSuccess {
		t.Errorf("approved call's record: %+v", rec)
	}

	// An approval as stored before: no entry point, no name as called.
	args, sum, err := toolrouter.CanonicalArguments(map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SaveResult(ctx, &toolrouter.Result{ToolCallID: "tc_old", PlanID: "p1", ToolName: "pay", Status: toolrouter.ResultAwaitingApproval, ApprovalID: "ap_old"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := st.CreateApproval(ctx, &toolrouter.Approval{ID: "ap_old", Status: toolrouter.ApprovalPending, ToolCallID: "tc_old", PlanID: "p1",
		ToolName: "pay", Arguments: args, ArgumentsSHA256: sum, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, fin, err := rt.Decide(ctx, "ap_old", true, ""); err != nil || !fin.Success {
		t.Fatalf("old approval: %+v %v", fin, err)
	}
	if rec := last("tc_old"); rec.EntryPoint != toolrouter.EntryRoute || rec.ToolName != "pay" || rec.Tool != "pay" {
		t.Errorf("old approval's record: %+v", rec)
	}
}
