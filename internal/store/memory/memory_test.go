package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/store/storebench"
	"github.com/toolrouterd/toolrouterd/internal/store/storetest"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Database: func(t *testing.T, now func() time.Time) func() store.Store {
			m := memory.New()
			m.Now = now
			return func() store.Store { return m }
		},
	})
}

// TestBounded: past MaxResults (MaxAudit) the oldest results (audit
// records) are deleted, so memory:// stays flat however many calls are
// routed (issue 37); a result stored again keeps its place, and one the
// retention sweep deleted frees its own.
func TestBounded(t *testing.T) {
	ctx := context.Background()
	m := memory.New()
	m.MaxResults, m.MaxAudit = 100, 80
	id := func(i int64) string { s, _ := toolrouter.ToolCallID("bench", i); return s }
	save := func(i int64) {
		t.Helper()
		res, rec := storebench.Route(id(i), i)
		if err := m.SaveResult(ctx, res, rec); err != nil {
			t.Fatal(err)
		}
	}
	kept := func(i int64) bool {
		_, err := m.GetResult(ctx, id(i))
		return err == nil
	}
	for i := range int64(1000) {
		save(i)
		if i == 950 {
			save(901) // stored again: keeps its place, still the oldest kept
		}
	}
	for i := range int64(1000) {
		if want := i >= 900; kept(i) != want {
			t.Errorf("result %d kept: %v, want %v", i, kept(i), want)
		}
	}
	recs, err := m.ListAudit(ctx, toolrouter.AuditFilter{Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 80 || len(recs) > 90 || *recs[0].Sequence != 999 {
		t.Errorf("audit records kept: %d, newest %d; want 80 to 90, newest 999", len(recs), *recs[0].Sequence)
	}
	// The sweep deletes them all; the next 100 are kept whole.
	if n, err := m.DeleteResultsBefore(ctx, time.Now().Add(time.Hour), 1000); err != nil || n != 100 {
		t.Fatalf("DeleteResultsBefore: %d, %v; want 100", n, err)
	}
	for i := int64(1000); i < 1100; i++ {
		save(i)
	}
	for i := int64(1000); i < 1100; i++ {
		if !kept(i) {
			t.Errorf("result %d deleted with room left", i)
		}
	}
}
