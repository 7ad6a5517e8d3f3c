package pin_test

import (
	"context"
	"slices"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/approval"
	"github.com/toolrouterd/toolrouterd/internal/pin"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestReviewsPageWithTheCursor: GET /approvals pages by next_cursor, so the
// definition reviews joined in are those past the cursor, each on one page
// (they were joined to every page: repeated, and with a page of reviews
// the cursor went back to the first page).
func TestReviewsPageWithTheCursor(t *testing.T) {
	r := newReplica(memory.New(), fx)
	r.list(mcpTool("read", "v1"))
	r.sync(t)
	r.list(mcpTool("read", "v1"), mcpTool("a", "A."), mcpTool("b", "B."), mcpTool("c", "C."), mcpTool("d", "D."), mcpTool("e", "E."))
	r.sync(t)
	all, err := r.k.Reviews(context.Background(), toolrouter.ApprovalPending)
	if err != nil || len(all) != 5 {
		t.Fatalf("pending reviews: %d, %v; want 5", len(all), err)
	}
	ap := pin.Approvals{Keeper: &approval.Keeper{}, Pins: r.k} // no call approvals
	var got, want []string
	for _, a := range all {
		want = append(want, a.ID)
	}
	f := toolrouter.ApprovalFilter{Status: toolrouter.ApprovalPending, Limit: 2}
	for page := 0; ; page++ {
		as, err := ap.ListApprovals(context.Background(), f)
		if err != nil || page == 5 {
			t.Fatalf("page %d: %d approvals, %v (pages so far: %v)", page, len(as), err, got)
		}
		for _, a := range as {
			got = append(got, a.ID)
		}
		if len(as) < f.Limit {
			break
		}
		last := as[len(as)-1]
		f.Before = toolrouter.Cursor{Time: last.CreatedAt, ID: last.ID}
	}
	if !slices.Equal(got, want) {
		t.Errorf("paged %v, want %v", got, want)
	}
}
