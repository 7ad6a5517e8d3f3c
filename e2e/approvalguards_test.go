package e2e_test

import (
	"fmt"
	"strings"
	"testing"
)

func approvalGuardsRegistry(toolURL string, narrowed bool) string {
	agentTools, gone := `["*"]`, `
  - name: gone
    key_sha256: `+sum("gone-key")+`
    tools: ["*"]`
	if narrowed {
		agentTools, gone = `["kb/*"]`, ""
	}
	return fmt.Sprintf(`tools:
  - name: billing/refund
    endpoint: %[1]s/refund
    approval: required
  - name: kb/search
    endpoint: %[1]s/search
clients:
  - name: agent
    key_sha256: %[2]s
    tools: %[3]s
  - name: reviewer
    key_sha256: %[4]s
    tools: ["*"]
    approver: true
  - name: boss
    key_sha256: %[5]s
    tools: ["*"]
    admin: true%[6]s
`, toolURL, sum("agent-key"), agentTools, sum("reviewer-key"), sum("boss-key"), gone)
}

// TestApprovalGuards, through the real binary: an approver reads another
// client's results only through an approval; an approver may not decide
// its own calls (an admin may); an approved call does not run once its
// client's scope no longer holds the tool, or the client is gone.
func TestApprovalGuards(t *testing.T) {
	t.Parallel()
	tool := newBodyTool(t)
	rt, path := startRouter(t, approvalGuardsRegistry(tool.srv.URL, false))
	u := rt.URL()
	asBoss, asGone := []string{"Authorization", "Bearer boss-key"}, []string{"Authorization", "Bearer gone-key"}
	decide := func(id string, as []string) response {
		return do(t, "POST", u+"/approvals/"+id, map[string]any{"decision": "approve"}, as...)
	}

	t.Run("approvers read results of approvals only", func(t *testing.T) {
		res := do(t, "POST", u+"/route", map[string]any{"plan_id": "p-read", "tool_call": map[string]any{"name": "kb/search", "arguments": "{}"}}, asAgent...).JSON(t)
		tc := res["tool_call_id"].(string)
		if r := do(t, "GET", u+"/results/"+tc+"?client=agent", nil, asReviewer...); r.Status != 404 {
			t.Errorf("an approver read another client's ordinary result: %d %s", r.Status, r.Body)
		}
		if r := do(t, "GET", u+"/results/"+tc+"?client=agent", nil, asBoss...); r.Status != 200 || r.JSON(t)["tool_call_id"] != tc {
			t.Errorf("an admin reading it: %d %s", r.Status, r.Body)
		}
		held := do(t, "POST", u+"/route", refundCall("p-read", 1), asAgent...).JSON(t)
		if r := do(t, "GET", u+"/results/"+held["tool_call_id"].(string)+"?client=agent", nil, asReviewer...); r.Status != 200 || r.JSON(t)["status"] != "awaiting_approval" {
			t.Errorf("an approver reading a held call's result: %d %s", r.Status, r.Body)
		}
	})

	t.Run("four eyes", func(t *testing.T) {
		before := len(tool.received())
		held := do(t, "POST", u+"/route", refundCall("p-self", 2), asReviewer...).JSON(t)
		id := held["approval_id"].(string)
		r := decide(id, asReviewer)
		if r.Status != 403 || r.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(string(r.Body), "its own calls") {
			t.Fatalf("an approver deciding its own call: %d %s", r.Status, r.Body)
		}
		if n := len(tool.received()) - before; n != 0 {
			t.Fatalf("the tool ran %d times", n)
		}
		if r := decide(id, asBoss); r.Status != 200 || r.JSON(t)["result"].(map[string]any)["success"] != true {
			t.Errorf("an admin deciding it: %d %s", r.Status, r.Body)
		}
	})

	t.Run("scope narrowed or client removed before approval", func(t *testing.T) {
		before := len(tool.received())
		narrowed := do(t, "POST", u+"/route", refundCall("p-narrow", 3), asAgent...).JSON(t)["approval_id"].(string)
		removed := do(t, "POST", u+"/route", refundCall("p-gone", 4), asGone...).JSON(t)["approval_id"].(string)
		rt.reload(t, path, approvalGuardsRegistry(tool.srv.URL, true))
		for _, id := range []string{narrowed, removed} {
			r := decide(id, asReviewer)
			fin, _ := r.JSON(t)["result"].(map[string]any)
			if r.Status != 200 || fin["success"] != false || fin["error_category"] != "permission" || fin["error"] != "the client may no longer call billing/refund" {
				t.Errorf("approving %s: %d %s", id, r.Status, r.Body)
			}
		}
		if n := len(tool.received()) - before; n != 0 {
			t.Errorf("the tool ran %d times for clients that may no longer call it", n)
		}
	})
}

// TestApprovedCallOfAViewDroppedBeforeApproval, through the real binary: a
// client bound to virtual servers whose held call's tool left its views
// (a reload) does not get it run by the approval.
func TestApprovedCallOfAViewDroppedBeforeApproval(t *testing.T) {
	t.Parallel()
	tool := newBodyTool(t)
	reg := func(deskTools string) string {
		return fmt.Sprintf(`tools:
  - name: billing/refund
    endpoint: %[1]s/refund
    approval: required
  - name: kb/search
    endpoint: %[1]s/search
virtual_servers:
  - {name: desk, tools: %[2]s}
clients:
  - {name: agent, key_sha256: %[3]s, virtual_servers: [desk]}
  - {name: reviewer, key_sha256: %[4]s, tools: ["*"], approver: true}
`, tool.srv.URL, deskTools, sum("agent-key"), sum("reviewer-key"))
	}
	rt, path := startRouter(t, reg(`["billing/refund", "kb/search"]`))
	u := rt.URL()
	held := do(t, "POST", u+"/route?server=desk", refundCall("p-desk", 5), asAgent...).JSON(t)
	id, _ := held["approval_id"].(string)
	if id == "" {
		t.Fatalf("the call was not held: %v", held)
	}
	// While the view holds the tool, the approved call runs.
	kept := do(t, "POST", u+"/route?server=desk", refundCall("p-desk", 6), asAgent...).JSON(t)
	if r := do(t, "POST", u+"/approvals/"+kept["approval_id"].(string), map[string]any{"decision": "approve"}, asReviewer...); r.Status != 200 || r.JSON(t)["result"].(map[string]any)["success"] != true {
		t.Fatalf("approving a call the view still holds: %d %s", r.Status, r.Body)
	}
	rt.reload(t, path, reg(`["kb/search"]`))
	r := do(t, "POST", u+"/approvals/"+id, map[string]any{"decision": "approve"}, asReviewer...)
	fin, _ := r.JSON(t)["result"].(map[string]any)
	if r.Status != 200 || fin["success"] != false || fin["error_category"] != "permission" || fin["error"] != "the client may no longer call billing/refund" {
		t.Errorf("approving: %d %s", r.Status, r.Body)
	}
	if n := len(tool.received()); n != 1 {
		t.Errorf("the tool ran %d times, want once (the call approved while the view held it)", n)
	}
}
