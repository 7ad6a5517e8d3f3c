package e2e_test

import (
	"path/filepath"
	"testing"
)

// TestApproverReadsRunItDecides (issue 21 item 14): a non-admin approver
// reads the run behind an approval it may decide (the console's run
// link), read-only: it cannot cancel it, a client that is no approver
// still gets 404, and once the run no longer waits the approver no longer
// sees it.
func TestApproverReadsRunItDecides(t *testing.T) {
	t.Parallel()
	tool := newBodyTool(t)
	fake := startFakeLLM(t, "openai")
	p := startReplicas(t, 1, pausedRegistry(tool.srv.URL, fake), "sqlite://"+filepath.Join(t.TempDir(), "runs.db"))[0]
	fake.script(t,
		map[string]any{"tool_calls": []any{toolCall("billing/refund", map[string]any{"amount": 5, "to": "acct-7"})}},
		map[string]any{"text": "Refunded."})
	resp := do(t, "POST", p.URL()+"/runs", map[string]any{"prompt": "refund acct-7"}, asAgent...)
	run := decodeRun(t, resp)
	pending := pendingOf(t, resp)
	if resp.Status != 202 || run.Status != "awaiting_approval" || len(pending) != 1 {
		t.Fatalf("POST /runs: %d %s", resp.Status, resp.Body)
	}
	ap := do(t, "GET", p.URL()+"/approvals/"+pending[0], nil, asReviewer...).JSON(t)
	if ap["run_id"] != run.RunID {
		t.Fatalf("approval: %v", ap)
	}
	got := do(t, "GET", p.URL()+"/runs/"+run.RunID, nil, asReviewer...)
	if got.Status != 200 || decodeRun(t, got).RunID != run.RunID || len(pendingOf(t, got)) != 1 {
		t.Fatalf("the approver's GET /runs/{id} of the run it decides: %d %s", got.Status, got.Body)
	}
	if r := do(t, "POST", p.URL()+"/runs/"+run.RunID+"/cancel", nil, asReviewer...); r.Status != 404 {
		t.Fatalf("the approver cancelled another client's run: %d %s", r.Status, r.Body)
	}
	if r := do(t, "GET", p.URL()+"/runs/"+run.RunID, nil, asOther...); r.Status != 404 {
		t.Fatalf("a client that is no approver read the run: %d %s", r.Status, r.Body)
	}
	if d := do(t, "POST", p.URL()+"/approvals/"+pending[0], map[string]any{"decision": "approve"}, asReviewer...); d.Status != 200 {
		t.Fatalf("approve: %d %s", d.Status, d.Body)
	}
	done := waitRun(t, p, run.RunID, func(r runResult) bool { return r.Status == "completed" }, asAgent...)
	if done.Content != "Refunded." {
		t.Fatalf("run: %+v", done)
	}
	if r := do(t, "GET", p.URL()+"/runs/"+run.RunID, nil, asReviewer...); r.Status != 404 {
		t.Fatalf("the approver reads a run that no longer waits for it: %d %s", r.Status, r.Body)
	}
}
