package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// auditListedByTimeNotInsertion (issue 21 item 9): a slow call that
// started first is written last; records are listed newest first by their
// time (the call's start), not by when they were written, and paging one
// at a time through records that share a time repeats and skips none.
func auditListedByTimeNotInsertion(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 2)
	base := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	// Written in this order; started at these offsets (seconds).
	starts := []int{5, 1, 9, 5, 0, 7, 5}
	var recs []toolrouter.AuditRecord
	for i, s := range starts {
		recs = append(recs, auditRecord(base.Add(time.Duration(s)*time.Second), "alice", "billing/refund", toolrouter.AuditSuccess, int64(i)))
	}
	for i := range recs { // one write per record, each committed: ids in this order
		if err := ss[i%2].AppendAudit(ctx, recs[i:i+1]); err != nil {
			t.Fatal(err)
		}
		if err := ss[i%2].Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	all, err := ss[0].ListAudit(ctx, toolrouter.AuditFilter{})
	if err != nil || len(all) != len(recs) {
		t.Fatalf("ListAudit: %d records, %v", len(all), err)
	}
	// Want by start, newest first; equal starts newest written first.
	wantSeq := []int64{2, 5, 6, 3, 0, 1, 4}
	var gotSeq []int64
	for i, r := range all {
		gotSeq = append(gotSeq, *r.Sequence)
		if i > 0 && (r.Time.After(all[i-1].Time) || r.Time.Equal(all[i-1].Time) && r.ID > all[i-1].ID) {
			t.Errorf("record %d (%v, id %d) after (%v, id %d): not newest first", i, r.Time, r.ID, all[i-1].Time, all[i-1].ID)
		}
	}
	if !reflect.DeepEqual(gotSeq, wantSeq) {
		t.Fatalf("listed (by sequence) %v, want %v", gotSeq, wantSeq)
	}
	// Pages of one, by cursor, through the records that share a time.
	var paged []int64
	f := toolrouter.AuditFilter{Limit: 1}
	for range len(recs) + 1 {
		page, err := ss[1].ListAudit(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		paged = append(paged, *page[0].Sequence)
		f.Before = toolrouter.CursorOf(page[0].Time, page[0].ID)
	}
	if !reflect.DeepEqual(paged, wantSeq) {
		t.Errorf("paged one at a time %v, want %v", paged, wantSeq)
	}
	// A client filter and a time range keep the order.
	got, err := ss[0].ListAudit(ctx, toolrouter.AuditFilter{Client: "alice", Since: base.Add(time.Second), Until: base.Add(8 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	gotSeq = nil
	for _, r := range got {
		gotSeq = append(gotSeq, *r.Sequence)
	}
	if want := []int64{5, 6, 3, 0, 1}; !reflect.DeepEqual(gotSeq, want) {
		t.Errorf("client and time range: %v, want %v", gotSeq, want)
	}
}
