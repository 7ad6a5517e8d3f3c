package e2e_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// TestPausedRunStaysWithinMaxRunBytes: a run that pauses for approval
// after a turn whose other call returned far more than
// TOOLROUTER_MAX_RUN_BYTES is stored within the cap (docs/runs.md "Runs:
// limits, cancellation and size") — the state it keeps to resume is part
// of its stored document — and still resumes once approved.
func TestPausedRunStaysWithinMaxRunBytes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	tool := newBodyTool(t)
	fake := startFakeLLM(t, "openai")
	const limit = 64 << 10
	rep := startReplicas(t, 1, pausedRegistry(tool.srv.URL, fake), "sqlite://"+path, "TOOLROUTER_MAX_RUN_BYTES=65536")[0]

	big := strings.Repeat("q", 1<<20) // echoed back by kb/search: a 1 MiB output
	fake.script(t,
		map[string]any{"tool_calls": []any{
			toolCall("billing/refund", map[string]any{"amount": 5, "to": "acct-7"}),
			toolCall("kb/search", map[string]any{"q": big}),
		}},
		map[string]any{"text": "done"})
	resp := do(t, "POST", rep.URL()+"/runs", map[string]any{"prompt": "refund"}, asAgent...)
	run := decodeRun(t, resp)
	if resp.Status != 202 || run.Status != "awaiting_approval" {
		t.Fatalf("POST /runs: %d %.300s", resp.Status, resp.Body)
	}

	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var size int
	if err := db.QueryRow(`SELECT length(body) FROM runs WHERE run_id = ?`, run.RunID).Scan(&size); err != nil {
		t.Fatal(err)
	}
	if size > limit {
		t.Fatalf("the paused run's stored document is %d bytes, over TOOLROUTER_MAX_RUN_BYTES (%d)", size, limit)
	}

	pending := pendingOf(t, resp)
	if d := do(t, "POST", rep.URL()+"/approvals/"+pending[0], map[string]any{"decision": "approve"}, asReviewer...); d.Status != 200 {
		t.Fatalf("approve: %d %s", d.Status, d.Body)
	}
	done := waitRun(t, rep, run.RunID, func(r runResult) bool { return r.Status != "awaiting_approval" && r.Status != "running" }, asAgent...)
	if done.Status != "completed" || done.Content != "done" {
		t.Fatalf("resumed run: %+v", done)
	}
}
