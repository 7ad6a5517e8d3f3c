package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store/sqlite"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestApprovalRetention (issue 21 item 5): decided and expired approvals
// older than TOOLROUTER_APPROVAL_RETENTION are deleted by the retention
// sweep; pending ones and recent decided ones stay.
func TestApprovalRetention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ret.db")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	mk := func(id string, age time.Duration, decide bool) {
		t.Helper()
		args, sum, _ := toolrouter.CanonicalArguments(map[string]any{"n": 1})
		a := &toolrouter.Approval{ID: id, Status: toolrouter.ApprovalPending, ToolCallID: fmt.Sprintf("tc_%024x", len(id)*1000+int(id[len(id)-1])), PlanID: "p",
			ToolName: "billing/refund", Arguments: args, ArgumentsSHA256: sum, Client: "agent",
			CreatedAt: now.Add(-age), ExpiresAt: now.Add(-age + 100*time.Hour)}
		if err := s.CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
		if decide {
			if _, err := s.DecideApproval(ctx, id, toolrouter.Decision{Status: toolrouter.ApprovalDenied, By: "r", At: now.Add(-age + time.Minute)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 3 {
		mk(fmt.Sprintf("ap_old_%d", i), 48*time.Hour, true)
	}
	mk("ap_old_pending", 48*time.Hour, false)
	mk("ap_new_decided", time.Hour, true)
	s.Close()

	tool := newBodyTool(t)
	rt := startReplicas(t, 1, approvalRegistry(tool.srv.URL), "sqlite://"+path, "TOOLROUTER_APPROVAL_RETENTION=24h")[0]
	waitFor(t, "the sweep", func() bool {
		_, next := do(t, "GET", rt.URL()+"/approvals?limit=3", nil, asReviewer...).JSON(t)["next_cursor"].(string)
		return !next
	})
	got := map[string]bool{}
	for _, a := range do(t, "GET", rt.URL()+"/approvals", nil, asReviewer...).JSON(t)["approvals"].([]any) {
		got[a.(map[string]any)["approval_id"].(string)] = true
	}
	if len(got) != 2 || !got["ap_old_pending"] || !got["ap_new_decided"] {
		t.Errorf("after the sweep: %v, want the pending one and the recent decided one", got)
	}
}
