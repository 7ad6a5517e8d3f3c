package e2e_test

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestApprovalsBounded (issue 21 item 5: 20 batches made 20,480 pending
// approvals, GET /approvals answered 9.5 MB at once): one client holds at
// most TOOLROUTER_MAX_PENDING_APPROVALS pending approvals (the calls over
// it fail as resource at once), another client has its own cap, and GET
// /approvals pages by limit and cursor like /audit, a non-approver seeing
// only its own.
func TestApprovalsBounded(t *testing.T) {
	t.Parallel()
	tool := newBodyTool(t)
	rt := startReplicas(t, 1, approvalRegistry(tool.srv.URL), "sqlite://"+filepath.Join(t.TempDir(), "a.db"),
		"TOOLROUTER_MAX_PENDING_APPROVALS=5")[0]
	batch := func(plan string, n int, as []string) []map[string]any {
		t.Helper()
		var calls []any
		for i := range n {
			calls = append(calls, map[string]any{"name": "billing/refund", "arguments": fmt.Sprintf(`{"to":"acct-%d","amount":1}`, i)})
		}
		r := do(t, "POST", rt.URL()+"/route/batch", map[string]any{"plan_id": plan, "tool_calls": calls}, as...)
		if r.Status != 200 {
			t.Fatalf("batch: %d %s", r.Status, r.Body)
		}
		var out []map[string]any
		for _, res := range r.JSON(t)["results"].([]any) {
			out = append(out, res.(map[string]any))
		}
		return out
	}
	held, refused := 0, 0
	for _, res := range batch("p1", 8, asAgent) {
		switch {
		case res["status"] == "awaiting_approval":
			held++
		case res["error_category"] == "resource" && strings.Contains(fmt.Sprint(res["error"]), "TOOLROUTER_MAX_PENDING_APPROVALS is 5"):
			refused++
		default:
			t.Errorf("result: %v", res)
		}
	}
	if held != 5 || refused != 3 {
		t.Fatalf("8 calls over a cap of 5: %d held, %d refused", held, refused)
	}
	if r := batch("p2", 1, asAgent)[0]; r["error_category"] != "resource" {
		t.Errorf("a 6th call later: %v", r)
	}
	for _, res := range batch("p3", 2, asOther) {
		if res["status"] != "awaiting_approval" {
			t.Errorf("another client's call is held under its own cap: %v", res)
		}
	}
	if n := len(tool.received()); n != 0 {
		t.Fatalf("the tool was called %d times", n)
	}

	// Pages of 2 for the approver: 7 approvals, each once, newest first.
	list := func(query string, as []string) ([]string, string) {
		t.Helper()
		r := do(t, "GET", rt.URL()+"/approvals?"+query, nil, as...)
		if r.Status != 200 {
			t.Fatalf("GET /approvals?%s: %d %s", query, r.Status, r.Body)
		}
		m := r.JSON(t)
		var ids []string
		for _, a := range m["approvals"].([]any) {
			a := a.(map[string]any)
			ids = append(ids, a["approval_id"].(string)+"/"+a["client"].(string))
		}
		next, _ := m["next_cursor"].(string)
		return ids, next
	}
	var all []string
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		q := "limit=2"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		ids, next := list(q, asReviewer)
		if len(ids) > 2 || pages > 5 {
			t.Fatalf("page %d: %v", pages, ids)
		}
		for _, id := range ids {
			if seen[id] {
				t.Errorf("%s listed twice", id)
			}
			seen[id] = true
		}
		all = append(all, ids...)
		if next == "" {
			break
		}
		cursor = next
	}
	if len(all) != 7 {
		t.Errorf("the approver paged through %d approvals, want 7: %v", len(all), all)
	}
	// The agent (no approver) sees its own five only.
	ids, next := list("limit=100", asAgent)
	if len(ids) != 5 || next != "" {
		t.Errorf("agent's approvals: %v (next %q)", ids, next)
	}
	for _, id := range ids {
		if !strings.HasSuffix(id, "/agent") {
			t.Errorf("the agent sees %s", id)
		}
	}
	if r := do(t, "GET", rt.URL()+"/approvals?limit=0", nil, asReviewer...); r.Status != 400 {
		t.Errorf("limit=0: %d %s", r.Status, r.Body)
	}
	if r := do(t, "GET", rt.URL()+"/approvals?cursor=x", nil, asReviewer...); r.Status != 400 {
		t.Errorf("a bad cursor: %d %s", r.Status, r.Body)
	}
	// A decision frees a slot.
	if d := do(t, "POST", rt.URL()+"/approvals/"+strings.Split(ids[0], "/")[0], map[string]any{"decision": "deny"}, asReviewer...); d.Status != 200 {
		t.Fatalf("deny: %d %s", d.Status, d.Body)
	}
	if r := batch("p4", 1, asAgent)[0]; r["status"] != "awaiting_approval" {
		t.Errorf("a call after a decision freed a slot: %v", r)
	}
}
