package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// approvalsByClientPagedAndPurged (issue 21 item 5): approvals filter by
// client in the store, page by cursor (newest first, approvals created at
// the same instant neither repeated nor skipped), count a client's pending
// ones, and the retention sweep deletes only decided ones older than its
// cut, in batches.
func approvalsByClientPagedAndPurged(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 2)
	base := clk.Now().UTC().Truncate(time.Second)
	var ids []string // newest first, as listed
	for i := 0; i < 9; i++ {
		a := newApproval(t, fmt.Sprintf("ap%d", i), "", base.Add(time.Duration(i/3)*time.Second), time.Hour) // three per instant
		if i%3 == 2 {
			a.Client = "other"
		}
		if err := ss[i%2].CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	// By created_at, then id, newest first; "other" holds ap2, ap5, ap8.
	want := []string{"ap7", "ap6", "ap4", "ap3", "ap1", "ap0"}
	f := toolrouter.ApprovalFilter{Client: "agent", Limit: 1}
	for range len(want) + 1 {
		page, err := ss[1].ListApprovals(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		ids = append(ids, page[0].ID)
		f.Before = toolrouter.Cursor{Time: page[0].CreatedAt, ID: page[0].ID}
	}
	if fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("agent's approvals paged one at a time: %v, want %v", ids, want)
	}
	page, err := ss[0].ListApprovals(ctx, toolrouter.ApprovalFilter{Limit: 4, Before: toolrouter.Cursor{Time: base.Add(2 * time.Second), ID: "ap7"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := idsOf(page); got != "[ap6 ap5 ap4 ap3]" {
		t.Errorf("every client's page after ap7: %s", got)
	}
	if n, err := ss[0].CountPendingApprovals(ctx, "other"); err != nil || n != 3 {
		t.Errorf("other's pending approvals: %d, %v; want 3", n, err)
	}
	for _, id := range []string{"ap0", "ap1", "ap2", "ap8"} {
		if _, err := ss[1].DecideApproval(ctx, id, toolrouter.Decision{Status: toolrouter.ApprovalDenied, By: "r", At: clk.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := ss[1].CountPendingApprovals(ctx, "other"); err != nil || n != 1 {
		t.Errorf("other's pending approvals after two decisions: %d, %v; want 1", n, err)
	}
	// Decided before the cut: ap0, ap1, ap2 (ap8 is newer; pending ones stay).
	cut := base.Add(2 * time.Second)
	if n, err := ss[0].PurgeApprovals(ctx, cut, 2); err != nil || n != 2 {
		t.Fatalf("purge: %d, %v; want 2 (a batch)", n, err)
	}
	if n, err := ss[1].PurgeApprovals(ctx, cut, 2); err != nil || n != 1 {
		t.Fatalf("second purge: %d, %v; want 1", n, err)
	}
	all, err := ss[0].ListApprovals(ctx, toolrouter.ApprovalFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if got := idsOf(all); got != "[ap8 ap7 ap6 ap5 ap4 ap3]" {
		t.Errorf("after the purge: %s", got)
	}
}

func idsOf(as []*toolrouter.Approval) string {
	var ids []string
	for _, a := range as {
		ids = append(ids, a.ID)
	}
	return fmt.Sprint(ids)
}
