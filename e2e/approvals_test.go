package e2e_test

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/toolrouterd/toolrouterd/internal/poll"
	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
)

// bodyTool is a tool endpoint that echoes its arguments and keeps every
// body it received.
type bodyTool struct {
	mu     sync.Mutex
	bodies []string
	srv    *httptest.Server
}

func newBodyTool(t *testing.T) *bodyTool {
	bt := &bodyTool{}
	bt.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bt.mu.Lock()
		bt.bodies = append(bt.bodies, string(b))
		bt.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(bt.srv.Close)
	return bt
}

func (bt *bodyTool) received() []string {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	return append([]string(nil), bt.bodies...)
}

func approvalRegistry(toolURL string) string {
	return fmt.Sprintf(`tools:
  - name: billing/refund
    endpoint: %[1]s/refund
    approval: required
    input_schema:
      type: object
      properties: {amount: {type: number}, to: {type: string}}
      required: [amount, to]
      additionalProperties: false
  - name: kb/search
    endpoint: %[1]s/search
clients:
  - name: agent
    models: ["*"]
    key_sha256: %[2]s
    tools: ["*"]
    approval: ["kb/delete*"]
  - name: reviewer
    models: ["*"]
    key_sha256: %[3]s
    tools: ["*"]
    approver: true
  - name: other
    models: ["*"]
    key_sha256: %[4]s
    tools: ["*"]
`, toolURL, sum("agent-key"), sum("reviewer-key"), sum("other-key"))
}

func sum(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

var (
	asAgent    = []string{"Authorization", "Bearer agent-key"}
	asReviewer = []string{"Authorization", "Bearer reviewer-key"}
	asOther    = []string{"Authorization", "Bearer other-key"}
)

func refundCall(plan string, amount float64) map[string]any {
	return map[string]any{"plan_id": plan, "tool_call": map[string]any{
		"id": "call_1", "type": "function",
		"function": map[string]any{"name": "billing/refund", "arguments": fmt.Sprintf(`{"to":"acct-7","amount":%v}`, amount)}}}
}

// waitFor polls f until it is true or the deadline passes.
func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	poll.Until(t, 15*time.Second, func() error {
		if !f() {
			return fmt.Errorf("waiting for %s", what)
		}
		return nil
	})
}

// TestApprovals: on SQLite and PostgreSQL, with two replicas on one store,
// a call of a tool with approval: required waits (202, not called), is
// seen by its client and approvers only, is decided once on the other
// replica (approve runs the stored arguments; deny and expiry store a
// permission failure), in a batch the other calls run, a stream stays
// open until the decision, and the stored arguments are bound by their
// digest.
func TestApprovals(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			var storeURL, sqlitePath string
			if backend == "sqlite" {
				sqlitePath = filepath.Join(t.TempDir(), "approvals.db")
				storeURL = "sqlite://" + sqlitePath
			} else {
				storeURL = pgtest.Start(t)
			}
			tool := newBodyTool(t)
			reps := startReplicas(t, 2, approvalRegistry(tool.srv.URL), storeURL, "TOOLROUTER_APPROVAL_TTL=1h")
			a, b := reps[0].URL(), reps[1].URL()

			t.Run("approve", func(t *testing.T) {
				resp := do(t, "POST", a+"/route", refundCall("plan-approve", 12.5), asAgent...)
				res := resp.JSON(t)
				if resp.Status != 202 || res["status"] != "awaiting_approval" || res["success"] != false || res["provider_result"] != nil {
					t.Fatalf("route: %d %s", resp.Status, resp.Body)
				}
				id, tc := res["approval_id"].(string), res["tool_call_id"].(string)
				if resp.Header.Get("Location") != "/approvals/"+id {
					t.Errorf("Location %q", resp.Header.Get("Location"))
				}
				if n := len(tool.received()); n != 0 {
					t.Fatalf("the tool was called %d times before approval", n)
				}
				if r := do(t, "GET", b+"/results/"+tc, nil, asAgent...); r.Status != 200 || r.JSON(t)["status"] != "awaiting_approval" {
					t.Errorf("result for its client: %d %s", r.Status, r.Body)
				}
				if r := do(t, "GET", b+"/results/"+tc, nil, asOther...); r.Status != 404 {
					t.Errorf("result for another client: %d %s", r.Status, r.Body)
				}
				list := do(t, "GET", b+"/approvals?status=pending", nil, asReviewer...)
				var found map[string]any
				for _, x := range list.JSON(t)["approvals"].([]any) {
					if x.(map[string]any)["approval_id"] == id {
						found = x.(map[string]any)
					}
				}
				canonical := `{"amount":12.5,"to":"acct-7"}`
				if found == nil || found["arguments_sha256"] != sum(canonical) || found["client"] != "agent" ||
					found["tool_name"] != "billing/refund" || found["tool_call_id"] != tc {
					t.Fatalf("pending list: %s", list.Body)
				}
				if r := do(t, "GET", b+"/approvals?status=maybe", nil, asReviewer...); r.Status != 400 || !strings.Contains(string(r.Body), "status") {
					t.Errorf("bad status filter: %d %s", r.Status, r.Body)
				}
				if r := do(t, "POST", b+"/approvals/"+id, map[string]any{"decision": "approve"}, asAgent...); r.Status != 403 {
					t.Errorf("a client without approver rights decided: %d %s", r.Status, r.Body)
				}
				// The decision cannot carry arguments: only the stored ones run.
				if r := do(t, "POST", b+"/approvals/"+id, map[string]any{"decision": "approve", "arguments": map[string]any{"amount": 9999}}, asReviewer...); r.Status != 400 {
					t.Errorf("a decision with arguments: %d %s", r.Status, r.Body)
				}
				dec := do(t, "POST", b+"/approvals/"+id, map[string]any{"decision": "approve", "reason": "ok"}, asReviewer...)
				if dec.Status != 200 {
					t.Fatalf("approve: %d %s", dec.Status, dec.Body)
				}
				out := dec.JSON(t)
				ap, fin := out["approval"].(map[string]any), out["result"].(map[string]any)
				if ap["status"] != "approved" || ap["decided_by"] != "reviewer" || fin["success"] != true || fin["status"] != "complete" || fin["tool_call_id"] != tc {
					t.Fatalf("approve: %s", dec.Body)
				}
				if got := tool.received(); len(got) != 1 || got[0] != canonical {
					t.Fatalf("tool received %q, want exactly the shown arguments once", got)
				}
				if pr := fin["provider_result"].(map[string]any); pr["tool_call_id"] != "call_1" || pr["role"] != "tool" {
					t.Errorf("provider_result %v", pr)
				}
				if r := do(t, "POST", a+"/approvals/"+id, map[string]any{"decision": "deny"}, asReviewer...); r.Status != 409 {
					t.Errorf("second decision: %d %s", r.Status, r.Body)
				}
				if r := do(t, "GET", a+"/results/"+tc, nil, asAgent...); r.JSON(t)["success"] != true || r.JSON(t)["status"] != "complete" {
					t.Errorf("final result: %s", r.Body)
				}
				if len(tool.received()) != 1 {
					t.Error("the tool ran again")
				}
			})

			t.Run("deny", func(t *testing.T) {
				res := do(t, "POST", a+"/route", refundCall("plan-deny", 3), asAgent...).JSON(t)
				before := len(tool.received())
				dec := do(t, "POST", b+"/approvals/"+res["approval_id"].(string), map[string]any{"decision": "deny", "reason": "not eligible"}, asReviewer...)
				fin := dec.JSON(t)["result"].(map[string]any)
				if fin["success"] != false || fin["error_category"] != "permission" || fin["error"] != "denied by reviewer: not eligible" {
					t.Fatalf("deny: %s", dec.Body)
				}
				if len(tool.received()) != before {
					t.Error("a denied call ran")
				}
				// An approver reads another client's call by naming it (tc_ ids are per client).
				r := do(t, "GET", b+"/results/"+res["tool_call_id"].(string)+"?client=agent", nil, asReviewer...)
				if r.JSON(t)["error"] != "denied by reviewer: not eligible" {
					t.Errorf("stored denial: %s", r.Body)
				}
			})

			t.Run("batch", func(t *testing.T) {
				resp := do(t, "POST", a+"/route/batch", map[string]any{"plan_id": "plan-batch", "tool_calls": []any{
					refundCall("", 1)["tool_call"],
					map[string]any{"name": "kb/search", "arguments": map[string]any{"q": "x"}},
				}}, asAgent...)
				results := resp.JSON(t)["results"].([]any)
				r0, r1 := results[0].(map[string]any), results[1].(map[string]any)
				if resp.Status != 200 || r0["status"] != "awaiting_approval" || r0["approval_id"] == nil || r1["success"] != true || r1["status"] != nil {
					t.Fatalf("batch: %d %s", resp.Status, resp.Body)
				}
			})

			t.Run("stream", func(t *testing.T) {
				type streamed struct {
					status int
					events []sseEvent
				}
				done := make(chan streamed, 1)
				go func() {
					st, ev := stream(t, a+"/route", refundCall("plan-stream", 4), asAgent...)
					done <- streamed{st, ev}
				}()
				var id string
				waitFor(t, "the streamed call's approval", func() bool {
					for _, x := range do(t, "GET", b+"/approvals?status=pending", nil, asReviewer...).JSON(t)["approvals"].([]any) {
						if x.(map[string]any)["plan_id"] == "plan-stream" {
							id = x.(map[string]any)["approval_id"].(string)
							return true
						}
					}
					return false
				})
				if r := do(t, "POST", b+"/approvals/"+id, map[string]any{"decision": "approve"}, asReviewer...); r.Status != 200 {
					t.Fatalf("approve: %d %s", r.Status, r.Body)
				}
				s := <-done
				var seen []string
				for _, e := range s.events {
					seen = append(seen, e.Event+":"+fmt.Sprint(e.Data["status"]))
				}
				if got := strings.Join(seen, " "); got != "update:pending update:awaiting_approval update:complete result:complete" {
					t.Fatalf("events: %s", got)
				}
				if last := s.events[len(s.events)-1].Data; last["success"] != true {
					t.Errorf("streamed result %v", last)
				}
			})

			t.Run("mcp", func(t *testing.T) {
				cs, err := mcpConnect(t, a, &http.Client{Transport: bearer{key: "agent-key", base: http.DefaultTransport}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				name := ""
				for n := range mcpTools(t, cs) {
					if strings.Contains(n, "refund") {
						name = n
					}
				}
				before := len(tool.received())
				res := mcpCall(t, cs, name, map[string]any{"amount": 7, "to": "acct-9"})
				id, _ := res.Meta["toolrouter/approval_id"].(string)
				tc, _ := res.Meta["toolrouter/tool_call_id"].(string)
				if !res.IsError || id == "" || !strings.Contains(mcpText(res), "awaiting approval") ||
					!strings.Contains(mcpText(res), id) || !strings.Contains(mcpText(res), "/results/"+tc) {
					t.Fatalf("tools/call of a tool needing approval: %+v %q", res.Meta, mcpText(res))
				}
				if len(tool.received()) != before {
					t.Fatal("the tool ran before approval")
				}
				if r := do(t, "POST", b+"/approvals/"+id, map[string]any{"decision": "approve"}, asReviewer...); r.JSON(t)["result"].(map[string]any)["success"] != true {
					t.Fatalf("approve: %s", r.Body)
				}
				if r := do(t, "GET", a+"/results/"+tc, nil, asAgent...); r.JSON(t)["success"] != true {
					t.Errorf("result after approval: %s", r.Body)
				}
			})

			if sqlitePath != "" {
				t.Run("arguments bound by digest", func(t *testing.T) {
					res := do(t, "POST", a+"/route", refundCall("plan-tamper", 5), asAgent...).JSON(t)
					id := res["approval_id"].(string)
					db, err := sql.Open("sqlite", "file:"+sqlitePath+"?_pragma=busy_timeout(10000)")
					if err != nil {
						t.Fatal(err)
					}
					defer db.Close()
					// Someone with access to the database changes the amount.
					if _, err := db.Exec(`UPDATE approvals SET body = replace(body, '"amount":5', '"amount":5000') WHERE approval_id = ?`, id); err != nil {
						t.Fatal(err)
					}
					before := len(tool.received())
					dec := do(t, "POST", b+"/approvals/"+id, map[string]any{"decision": "approve"}, asReviewer...)
					fin := dec.JSON(t)["result"].(map[string]any)
					if fin["success"] != false || fin["error_category"] != "permission" || !strings.Contains(fin["error"].(string), "SHA-256") {
						t.Fatalf("tampered approval: %s", dec.Body)
					}
					if len(tool.received()) != before {
						t.Error("tampered arguments reached the tool")
					}
				})
			}

			t.Run("expire", func(t *testing.T) {
				short := startReplicas(t, 1, approvalRegistry(tool.srv.URL), storeURL, "TOOLROUTER_APPROVAL_TTL=1s")[0].URL()
				res := do(t, "POST", short+"/route", refundCall("plan-expire", 6), asAgent...).JSON(t)
				id, tc := res["approval_id"].(string), res["tool_call_id"].(string)
				// The sweep marks the approval expired, then stores the call's
				// result (two writes): wait for both.
				var r map[string]any
				waitFor(t, "expiry", func() bool {
					r = do(t, "GET", a+"/results/"+tc, nil, asAgent...).JSON(t)
					return r["status"] == "complete" && do(t, "GET", a+"/approvals/"+id, nil, asReviewer...).JSON(t)["status"] == "expired"
				})
				if r["error"] != "approval expired" || r["error_category"] != "permission" || r["status"] != "complete" {
					t.Fatalf("expired result: %v", r)
				}
				if d := do(t, "POST", b+"/approvals/"+id, map[string]any{"decision": "approve"}, asReviewer...); d.Status != 409 {
					t.Errorf("approving an expired call: %d %s", d.Status, d.Body)
				}
				for _, x := range do(t, "GET", b+"/approvals?status=expired", nil, asReviewer...).JSON(t)["approvals"].([]any) {
					if x.(map[string]any)["approval_id"] == id {
						return
					}
				}
				t.Error("not listed as expired")
			})
		})
	}
}
