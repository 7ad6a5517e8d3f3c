package e2e_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
)

// pausedRegistry is the approvals registry (billing/refund needs an
// approver) with the fake as its LLM provider.
func pausedRegistry(toolURL string, fake *fakeLLM) string {
	return strings.Replace(approvalRegistry(toolURL), "clients:", fmt.Sprintf(`providers:
  - {name: fake, kind: openai, base_url: %s, model: fake-model}
default_provider: fake
clients:`, fake.baseURL), 1)
}

// lastToolMessage is the content of the tool message answering callID in
// the last request the fake received.
func lastToolMessage(t *testing.T, fake *fakeLLM, callID string) string {
	t.Helper()
	reqs := fake.requests(t)
	if len(reqs) == 0 {
		t.Fatal("the fake received nothing")
	}
	msgs, _ := reqs[len(reqs)-1]["messages"].([]any)
	for _, m := range msgs {
		m := m.(map[string]any)
		if m["role"] == "tool" && m["tool_call_id"] == callID {
			s, _ := m["content"].(string)
			return s
		}
	}
	t.Fatalf("no tool message answers %s in %v", callID, msgs)
	return ""
}

// providerCallIDs maps each record's tool name to its provider call id.
func providerCallIDs(t *testing.T, r response) map[string]string {
	t.Helper()
	var run struct {
		ToolCalls []struct {
			ToolName       string `json:"tool_name"`
			ProviderCallID string `json:"provider_call_id"`
		} `json:"tool_calls"`
	}
	if err := json.Unmarshal(r.Body, &run); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tc := range run.ToolCalls {
		out[tc.ToolName] = tc.ProviderCallID
	}
	return out
}

// pendingOf is the approval ids a paused run lists.
func pendingOf(t *testing.T, r response) []string {
	t.Helper()
	var run struct {
		PendingApprovals []struct {
			ApprovalID string `json:"approval_id"`
			ToolName   string `json:"tool_name"`
		} `json:"pending_approvals"`
	}
	if err := json.Unmarshal(r.Body, &run); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range run.PendingApprovals {
		ids = append(ids, p.ApprovalID)
	}
	return ids
}

// TestRunPausesForApproval: on SQLite and PostgreSQL, two replicas share
// the store. A run whose model calls a tool needing approval pauses once
// the turn's other call ran (a sync POST answers 202 with the paused run
// and its pending approval); the replica that started it is stopped; the
// approval is decided on the other replica, which resumes the run with
// the tool's result in the model's next turn. A denied call reaches the
// model as a tool error (SSE form: the stream ends with awaiting_approval),
// and a paused run can be cancelled (async form).
func TestRunPausesForApproval(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			storeURL := "sqlite://" + filepath.Join(t.TempDir(), "runs.db")
			if backend == "postgres" {
				storeURL = pgtest.Start(t)
			}
			tool := newBodyTool(t)
			fake := startFakeLLM(t, "openai")
			reg := pausedRegistry(tool.srv.URL, fake)
			reps := startReplicas(t, 2, reg, storeURL, "TOOLROUTER_RUN_HEARTBEAT=200ms")
			a, b := reps[0], reps[1]

			t.Run("approved across a restart", func(t *testing.T) {
				fake.script(t,
					map[string]any{"tool_calls": []any{
						toolCall("billing/refund", map[string]any{"amount": 5, "to": "acct-7"}),
						toolCall("kb/search", map[string]any{"q": "policy"}),
					}},
					map[string]any{"text": "Refunded 5 to acct-7."})
				resp := do(t, "POST", a.URL()+"/runs", map[string]any{"prompt": "refund acct-7"}, asAgent...)
				run := decodeRun(t, resp)
				if resp.Status != 202 || run.Status != "awaiting_approval" || resp.Header.Get("Location") != "/runs/"+run.RunID {
					t.Fatalf("sync POST /runs: %d %v %s", resp.Status, resp.Header, resp.Body)
				}
				pending := pendingOf(t, resp)
				if len(run.ToolCalls) != 2 || run.ToolCalls[0].Success || !run.ToolCalls[1].Success || len(pending) != 1 {
					t.Fatalf("paused run: %s", resp.Body)
				}
				if got := tool.received(); len(got) != 1 || !strings.Contains(got[0], `"q":"policy"`) {
					t.Fatalf("before the decision the tool received %q", got)
				}
				callIDs := providerCallIDs(t, resp)

				// The replica that started it goes away; the run waits in the store.
				if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				select {
				case <-a.done:
				case <-time.After(15 * time.Second):
					t.Fatal("replica a did not stop")
				}
				if got := decodeRun(t, do(t, "GET", b.URL()+"/runs/"+run.RunID, nil, asAgent...)); got.Status != "awaiting_approval" {
					t.Fatalf("after the restart the run is %s", got.Status)
				}
				d := do(t, "POST", b.URL()+"/approvals/"+pending[0], map[string]any{"decision": "approve"}, asReviewer...)
				if d.Status != 200 {
					t.Fatalf("approve: %d %s", d.Status, d.Body)
				}
				done := waitRun(t, b, run.RunID, func(r runResult) bool { return r.Status != "awaiting_approval" && r.Status != "running" }, asAgent...)
				if done.Status != "completed" || done.Content != "Refunded 5 to acct-7." || len(done.ToolCalls) != 2 || !done.ToolCalls[0].Success {
					t.Fatalf("resumed run: %+v", done)
				}
				if got := lastToolMessage(t, fake, callIDs["billing/refund"]); !strings.Contains(got, `"acct-7"`) {
					t.Fatalf("the model's next turn got %q for the refund", got)
				}
				if got := tool.received(); len(got) != 2 || !strings.Contains(got[1], `"amount":5`) {
					t.Fatalf("the tool received %q", got)
				}
			})

			t.Run("denied, streamed", func(t *testing.T) {
				fake.script(t,
					map[string]any{"tool_calls": []any{toolCall("billing/refund", map[string]any{"amount": 900, "to": "acct-9"})}},
					map[string]any{"text": "The refund was denied."})
				status, events := stream(t, b.URL()+"/runs", map[string]any{"prompt": "refund acct-9"}, asAgent...)
				if status != 200 || len(events) == 0 || events[len(events)-1].Event != "awaiting_approval" {
					t.Fatalf("stream: %d %v", status, events)
				}
				paused := events[len(events)-1].Data
				id, _ := paused["run_id"].(string)
				pa, _ := paused["pending_approvals"].([]any)
				if paused["status"] != "awaiting_approval" || len(pa) != 1 {
					t.Fatalf("awaiting_approval event: %v", paused)
				}
				apID := pa[0].(map[string]any)["approval_id"].(string)
				callIDs := providerCallIDs(t, do(t, "GET", b.URL()+"/runs/"+id, nil, asAgent...))
				if d := do(t, "POST", b.URL()+"/approvals/"+apID, map[string]any{"decision": "deny", "reason": "too much"}, asReviewer...); d.Status != 200 {
					t.Fatalf("deny: %d %s", d.Status, d.Body)
				}
				done := waitRun(t, b, id, func(r runResult) bool { return r.Status != "awaiting_approval" && r.Status != "running" }, asAgent...)
				if done.Status != "completed" || done.ToolCalls[0].Success || done.ToolCalls[0].Error == nil || *done.ToolCalls[0].Error != "denied by reviewer: too much" {
					t.Fatalf("denied run: %+v", done)
				}
				if got := lastToolMessage(t, fake, callIDs["billing/refund"]); !strings.Contains(got, "denied by reviewer: too much") {
					t.Fatalf("the model's next turn got %q for the denied refund", got)
				}
				if got := tool.received(); len(got) != 2 {
					t.Fatalf("a denied call reached the tool: %q", got)
				}
			})

			t.Run("async, cancelled while paused", func(t *testing.T) {
				fake.script(t, map[string]any{"tool_calls": []any{toolCall("billing/refund", map[string]any{"amount": 1, "to": "acct-1"})}})
				resp := do(t, "POST", b.URL()+"/runs", map[string]any{"prompt": "refund acct-1"}, append([]string{"Prefer", "respond-async"}, asAgent...)...)
				if resp.Status != 202 {
					t.Fatalf("async: %d %s", resp.Status, resp.Body)
				}
				id := decodeRun(t, resp).RunID
				waitRun(t, b, id, func(r runResult) bool { return r.Status == "awaiting_approval" }, asAgent...)
				c := do(t, "POST", b.URL()+"/runs/"+id+"/cancel", nil, asAgent...)
				if c.Status != 200 || decodeRun(t, c).Status != "cancelled" {
					t.Fatalf("cancel a paused run: %d %s", c.Status, c.Body)
				}
				pending := do(t, "GET", b.URL()+"/approvals?status=pending&run_id="+id, nil, asReviewer...).JSON(t)["approvals"].([]any)
				if len(pending) != 1 {
					t.Fatalf("pending approvals of the cancelled run: %v", pending)
				}
				apID := pending[0].(map[string]any)["approval_id"].(string)
				if d := do(t, "POST", b.URL()+"/approvals/"+apID, map[string]any{"decision": "approve"}, asReviewer...); d.Status != 200 {
					t.Fatalf("approve: %d %s", d.Status, d.Body)
				}
				// The decision does not bring a cancelled run back.
				if got := decodeRun(t, do(t, "GET", b.URL()+"/runs/"+id, nil, asAgent...)); got.Status != "cancelled" {
					t.Fatalf("cancelled run is now %s", got.Status)
				}
			})
		})
	}
}
