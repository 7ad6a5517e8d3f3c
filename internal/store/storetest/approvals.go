package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

func newApproval(t *testing.T, id, runID string, now time.Time, ttl time.Duration) *toolrouter.Approval {
	t.Helper()
	args, sum, err := toolrouter.CanonicalArguments(map[string]any{"amount": 12.5, "to": "acct-1"})
	if err != nil {
		t.Fatal(err)
	}
	return &toolrouter.Approval{ID: id, Status: toolrouter.ApprovalPending, ToolCallID: "tc_" + id, PlanID: "plan-a",
		Sequence: 3, ToolName: "billing/refund", Arguments: args, ArgumentsSHA256: sum, Client: "agent", RunID: runID,
		CreatedAt: now.UTC(), ExpiresAt: now.Add(ttl).UTC()}
}

// approvalsDecidedOnceAcrossReplicas: an approval reads back as stored,
// lists filter by status and run newest first, and of many deciders on
// every replica exactly one wins; the others get ECONFLICT.
func approvalsDecidedOnceAcrossReplicas(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	s := open()
	a1 := newApproval(t, "ap1", "", clk.Now(), time.Hour)
	clk.Advance(time.Second)
	a2 := newApproval(t, "ap2", "run-1", clk.Now(), time.Hour)
	for _, a := range []*toolrouter.Approval{a1, a2} {
		if err := s.CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GetApproval(ctx, "ap1")
	if err != nil || string(got.Arguments) != string(a1.Arguments) || got.ArgumentsSHA256 != a1.ArgumentsSHA256 ||
		!got.ExpiresAt.Equal(a1.ExpiresAt) || got.Client != "agent" || got.Status != toolrouter.ApprovalPending {
		t.Fatalf("GetApproval = %+v, %v; want %+v", got, err, a1)
	}
	if _, err := s.GetApproval(ctx, "nope"); toolrouter.ErrorCode(err) != toolrouter.ENOTFOUND {
		t.Fatalf("unknown approval: %v", err)
	}
	list := func(f toolrouter.ApprovalFilter) string {
		t.Helper()
		as, err := s.ListApprovals(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, a := range as {
			out += a.ID + " "
		}
		return out
	}
	if l := list(toolrouter.ApprovalFilter{}); l != "ap2 ap1 " {
		t.Errorf("all: %q, want newest first", l)
	}
	if l := list(toolrouter.ApprovalFilter{RunID: "run-1"}); l != "ap2 " {
		t.Errorf("run-1: %q", l)
	}

	var (
		wg             sync.WaitGroup
		mu             sync.Mutex
		wins, conflict int
	)
	for i := range 8 {
		st := s
		if b.Replicas {
			st = open()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			status := toolrouter.ApprovalApproved
			if i%2 == 1 {
				status = toolrouter.ApprovalDenied
			}
			_, err := st.DecideApproval(ctx, "ap1", toolrouter.Decision{Status: status, By: fmt.Sprint("approver-", i), Reason: "r", At: clk.Now()})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case toolrouter.ErrorCode(err) == toolrouter.ECONFLICT:
				conflict++
			default:
				t.Errorf("decide: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || conflict != 7 {
		t.Fatalf("decisions: %d won, %d conflicted; want 1 and 7", wins, conflict)
	}
	got, _ = s.GetApproval(ctx, "ap1")
	if got.Status == toolrouter.ApprovalPending || got.DecidedAt == nil || got.DecidedBy == nil || *got.Reason != "r" {
		t.Errorf("decided approval = %+v", got)
	}
	if l := list(toolrouter.ApprovalFilter{Status: toolrouter.ApprovalPending}); l != "ap2 " {
		t.Errorf("pending: %q", l)
	}
	if l := list(toolrouter.ApprovalFilter{Status: got.Status, Limit: 5}); l != "ap1 " {
		t.Errorf("%s: %q", got.Status, l)
	}
}

// approvalsExpireOnce: a pending approval past its expiry can no longer be
// approved, and the sweep marks it expired once even with every replica
// sweeping.
func approvalsExpireOnce(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	s := open()
	if err := s.CreateApproval(ctx, newApproval(t, "ap-exp", "", clk.Now(), time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateApproval(ctx, newApproval(t, "ap-live", "", clk.Now(), time.Hour)); err != nil {
		t.Fatal(err)
	}
	if exp, err := s.ExpireApprovals(ctx, clk.Now()); err != nil || len(exp) != 0 {
		t.Fatalf("nothing due yet: %v, %v", exp, err)
	}
	clk.Advance(time.Minute)
	_, err := s.DecideApproval(ctx, "ap-exp", toolrouter.Decision{Status: toolrouter.ApprovalApproved, By: "x", At: clk.Now()})
	if toolrouter.ErrorCode(err) != toolrouter.ECONFLICT {
		t.Fatalf("approving an expired approval: %v, want conflict", err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int
	)
	for range 4 {
		st := s
		if b.Replicas {
			st = open()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			exp, err := st.ExpireApprovals(ctx, clk.Now())
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, a := range exp {
				if a.ID != "ap-exp" || a.Status != toolrouter.ApprovalExpired {
					t.Errorf("expired %+v", a)
				}
				total++
			}
		}()
	}
	wg.Wait()
	if total != 1 {
		t.Fatalf("expired %d times, want once", total)
	}
	if a, _ := s.GetApproval(ctx, "ap-live"); a.Status != toolrouter.ApprovalPending {
		t.Errorf("a live approval became %s", a.Status)
	}
}
