package storetest

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// clientsAreIsolated: two clients using one plan_id get separate
// sequences and results; runs are listed per client (docs/security.md "Clients").
func clientsAreIsolated(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 2)
	for i, c := range []string{"alice", "bob"} {
		for want := int64(0); want < 3; want++ {
			got, err := ss[i].NextSequence(ctx, toolrouter.ScopedKey(c, "plan-same"))
			if err != nil || got != want {
				t.Fatalf("%s: sequence %d, %v; want %d", c, got, err, want)
			}
		}
	}
	ra, rb := sampleResult("tc_same"), sampleResult("tc_same")
	ra.Client, rb.Client, rb.Sequence = "alice", "bob", 7
	for _, r := range []*toolrouter.Result{ra, rb} {
		if err := ss[0].SaveResult(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// Results are group-committed: committed on ss[0] before another
	// replica reads them.
	if err := ss[0].Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*toolrouter.Result{ra, rb} {
		got, err := ss[1].GetResult(ctx, toolrouter.ScopedKey(r.Client, "tc_same"))
		if err != nil {
			t.Fatal(err)
		}
		if got.Sequence != r.Sequence {
			t.Errorf("%s: result of sequence %d, want %d", r.Client, got.Sequence, r.Sequence)
		}
	}
	_, err := ss[1].GetResult(ctx, "tc_same")
	wantCode(t, err, toolrouter.ENOTFOUND)

	base := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for i, c := range []string{"alice", "bob", "alice", ""} {
		r := sampleRun(fmt.Sprintf("run-%d", i), "plan-same", base.Add(time.Duration(i)*time.Minute))
		r.Client = c
		if err := ss[i%2].SaveRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ss[1].GetRun(ctx, "run-1")
	if err != nil || got.Client != "bob" {
		t.Fatalf("run-1: client %v, %v; want bob", got, err)
	}
	for c, want := range map[string][]string{"alice": {"run-2", "run-0"}, "bob": {"run-1"}, "": {"run-3"}, "carol": {}} {
		rs, err := ss[0].ListClientRuns(ctx, c, "plan-same", 0)
		if err != nil {
			t.Fatal(err)
		}
		ids := []string{}
		for _, r := range rs {
			ids = append(ids, r.RunID)
			if r.Client != c {
				t.Errorf("run %s of client %q listed for %q", r.RunID, r.Client, c)
			}
		}
		if !reflect.DeepEqual(ids, want) {
			t.Errorf("runs of %q: %v, want %v", c, ids, want)
		}
	}
	// Without a plan: the client's runs of every plan.
	if err := ss[0].SaveRun(ctx, func() *toolrouter.Run {
		r := sampleRun("run-other-plan", "plan-other", base.Add(time.Hour))
		r.Client = "alice"
		return r
	}()); err != nil {
		t.Fatal(err)
	}
	var recent []string
	rs, err := ss[1].ListClientRuns(ctx, "alice", "", 10)
	for _, r := range rs {
		recent = append(recent, r.RunID)
	}
	if want := []string{"run-other-plan", "run-2", "run-0"}; err != nil || !reflect.DeepEqual(recent, want) {
		t.Errorf("alice's runs of every plan: %v %v, want %v", recent, err, want)
	}
	all, err := ss[0].ListRuns(ctx, "plan-same", 0)
	if err != nil || len(all) != 4 {
		t.Errorf("ListRuns: %d runs, %v; want 4", len(all), err)
	}
}

func auditRecord(at time.Time, client, tool, outcome string, seq int64) toolrouter.AuditRecord {
	return toolrouter.AuditRecord{Time: at, Client: client, EntryPoint: toolrouter.EntryRoute, PlanID: "plan-1",
		Sequence: &seq, ToolCallID: "tc_x", ToolName: tool + "-alias", Tool: tool,
		ArgsSHA256: toolrouter.ArgsDigest(map[string]any{"n": seq}), Outcome: outcome,
		DurationMS: 1.25, Replica: "r1"}
}

// auditAppendListPurge: records come back as written, newest first,
// filtered and paged; the sweep deletes only old records, in batches.
func auditAppendListPurge(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 2)
	base := time.Date(2025, 6, 1, 12, 0, 0, 123456000, time.UTC)
	var recs []toolrouter.AuditRecord
	for i := 0; i < 10; i++ {
		client, tool, outcome := "alice", "billing/refund", toolrouter.AuditSuccess
		if i%2 == 1 {
			client, tool, outcome = "bob", "math/add", toolrouter.AuditDenied
		}
		recs = append(recs, auditRecord(base.Add(time.Duration(i)*time.Hour), client, tool, outcome, int64(i)))
	}
	recs[3].Sequence = nil // a rate-limited call has none
	recs[3].ErrorCategory = "not_found"
	// The guardrails' decisions come back as written (docs/trusting-tools.md "Trusting
	// tools"); a record without any has none (nil), not an empty list.
	recs[2].Guardrails = []toolrouter.GuardrailDecision{
		{Name: "policy", Phase: "before", Decision: "modify", Reason: "amount capped"},
		{Name: "shadow", Phase: "before", Decision: "deny", Mode: "audit", Reason: "would deny"},
		{Name: "secrets", Phase: "after", Decision: "modify", Reason: "jwt×2", Redacted: 2},
	}
	recs[6].Guardrails = []toolrouter.GuardrailDecision{{Name: "hook", Phase: "after", Decision: "error",
		Reason: "guardrail hook failed: no answer within 1s (timeout); the call is refused (on_error: deny)"}}
	// The backend credential a call was made with comes back as written
	// (docs/backend-auth.md); a record without one has none (nil).
	recs[4].Credential = &toolrouter.CredentialUse{Mode: "token_exchange", Subject: "alice", Actor: "toolrouterd", TokenID: "jti-1"}
	recs[7].Credential = &toolrouter.CredentialUse{Mode: "per_client", Actor: "support", TokenID: "sha256:0123456789abcdef"}
	recs[5].ParentCallID = "tc_parent" // a call a code mode program made (migration 0105)
	if err := ss[0].AppendAudit(ctx, recs[:5]); err != nil {
		t.Fatal(err)
	}
	// Written behind: committed on ss[0] before ss[1] writes (ss[1]'s
	// ListAudit flushes its own).
	if err := ss[0].Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ss[1].AppendAudit(ctx, recs[5:]); err != nil {
		t.Fatal(err)
	}
	all, err := ss[1].ListAudit(ctx, toolrouter.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 10 {
		t.Fatalf("%d records, want 10", len(all))
	}
	for i := range all { // the store numbers them, in the order written
		recs[9-i].ID = all[i].ID
		if i > 0 && all[i].ID >= all[i-1].ID {
			t.Fatalf("ids not decreasing, newest first: %d then %d", all[i-1].ID, all[i].ID)
		}
	}
	for i, got := range all {
		want := recs[9-i]
		if !sameInstant(got.Time, want.Time) {
			t.Errorf("record %d: time %v, want %v", i, got.Time, want.Time)
		}
		got.Time = want.Time
		if !reflect.DeepEqual(got, want) {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
	ids := func(f toolrouter.AuditFilter) []int64 {
		t.Helper()
		rs, err := ss[0].ListAudit(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		out := []int64{}
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	id := func(is ...int) []int64 {
		out := []int64{}
		for _, i := range is {
			out = append(out, recs[i].ID)
		}
		return out
	}
	for name, c := range map[string]struct {
		f    toolrouter.AuditFilter
		want []int64
	}{
		"client":        {toolrouter.AuditFilter{Client: "alice"}, id(8, 6, 4, 2, 0)},
		"tool":          {toolrouter.AuditFilter{Tool: "math/add"}, id(9, 7, 5, 3, 1)},
		"tool as sent":  {toolrouter.AuditFilter{Tool: "math/add-alias"}, id(9, 7, 5, 3, 1)},
		"outcome":       {toolrouter.AuditFilter{Outcome: toolrouter.AuditDenied, Limit: 2}, id(9, 7)},
		"time range":    {toolrouter.AuditFilter{Since: base.Add(2 * time.Hour), Until: base.Add(5 * time.Hour)}, id(4, 3, 2)},
		"page":          {toolrouter.AuditFilter{Before: toolrouter.CursorOf(recs[4].Time, recs[4].ID), Limit: 3}, id(3, 2, 1)},
		"nothing":       {toolrouter.AuditFilter{Client: "carol"}, id()},
		"all the terms": {toolrouter.AuditFilter{Client: "alice", Tool: "billing/refund", Outcome: toolrouter.AuditSuccess, Since: base.Add(time.Hour), Before: toolrouter.CursorOf(recs[8].Time, recs[8].ID)}, id(6, 4, 2)},
	} {
		if got := ids(c.f); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: ids %v, want %v", name, got, c.want)
		}
	}

	n, err := ss[0].PurgeAudit(ctx, base.Add(4*time.Hour), 3)
	if err != nil || n != 3 {
		t.Fatalf("purge: %d, %v; want 3", n, err)
	}
	n, err = ss[1].PurgeAudit(ctx, base.Add(4*time.Hour), 3)
	if err != nil || n != 1 {
		t.Fatalf("second purge: %d, %v; want 1", n, err)
	}
	if got := ids(toolrouter.AuditFilter{}); !reflect.DeepEqual(got, id(9, 8, 7, 6, 5, 4)) {
		t.Errorf("after purge: %v", got)
	}
}

// takeRateIsSharedAndBounded: replicas count into one counter per client
// and window; concurrent takers never exceed the quota together.
func takeRateIsSharedAndBounded(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 3)
	w := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	taken := 0
	var wg sync.WaitGroup
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := ss[i%3].TakeRate(ctx, "alice", w, 1, 10)
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				mu.Lock()
				taken++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if taken != 10 {
		t.Errorf("%d calls taken, want 10", taken)
	}
	if used, ok, err := ss[0].TakeRate(ctx, "alice", w, 1, 10); err != nil || ok || used != 10 {
		t.Errorf("over quota: used %d ok %v err %v; want 10 false", used, ok, err)
	}
	if used, ok, err := ss[1].TakeRate(ctx, "bob", w, 11, 10); err != nil || ok || used != 0 {
		t.Errorf("more than the quota at once: used %d ok %v err %v; want 0 false", used, ok, err)
	}
	if used, ok, err := ss[1].TakeRate(ctx, "alice", w.Add(time.Minute), 4, 10); err != nil || !ok || used != 4 {
		t.Errorf("next window: used %d ok %v err %v; want 4 true", used, ok, err)
	}
	if n, err := ss[2].PurgeRates(ctx, w.Add(time.Second)); err != nil || n != 1 {
		t.Errorf("purge rates: %d, %v; want 1", n, err)
	}
	if used, _, err := ss[2].TakeRate(ctx, "alice", w, 0, 10); err != nil || used != 0 {
		t.Errorf("purged window: used %d, %v; want 0", used, err)
	}
}

// resultAndItsAuditRecordAreWrittenTogether: SaveResult stores the call's
// audit record with its result (docs/security.md "Audit trail"), and an audit record
// without a result on its own; after Flush another replica sees them all.
func resultAndItsAuditRecordAreWrittenTogether(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 2)
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	res := sampleResult("tc_audited")
	res.Client = "alice"
	rec := auditRecord(at, "alice", "billing/refund", toolrouter.AuditFailure, res.Sequence)
	rec.ToolCallID, rec.ErrorCategory = res.ToolCallID, "execution"
	limited := auditRecord(at.Add(time.Second), "alice", "", toolrouter.AuditRateLimited, 0)
	limited.Sequence, limited.ToolCallID, limited.ToolName = nil, "", ""
	if err := ss[0].SaveResult(ctx, res, rec); err != nil {
		t.Fatal(err)
	}
	if err := ss[0].AppendAudit(ctx, []toolrouter.AuditRecord{limited}); err != nil {
		t.Fatal(err)
	}
	if err := ss[0].Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := ss[1].GetResult(ctx, toolrouter.ScopedKey("alice", "tc_audited"))
	if err != nil {
		t.Fatalf("result after Flush: %v", err)
	}
	if got.ToolCallID != res.ToolCallID || got.Sequence != res.Sequence {
		t.Errorf("result %s/%d, want %s/%d", got.ToolCallID, got.Sequence, res.ToolCallID, res.Sequence)
	}
	recs, err := ss[1].ListAudit(ctx, toolrouter.AuditFilter{Client: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d audit records after Flush, want 2: %+v", len(recs), recs)
	}
	for i, want := range []toolrouter.AuditRecord{limited, rec} { // newest first
		g := recs[i]
		if !sameInstant(g.Time, want.Time) {
			t.Errorf("record %d: time %v, want %v", i, g.Time, want.Time)
		}
		g.ID, g.Time = 0, want.Time
		if !reflect.DeepEqual(g, want) {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, g, want)
		}
	}
}
