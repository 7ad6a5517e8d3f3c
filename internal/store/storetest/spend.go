package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// spendReservationsHoldTheLimitAcrossReplicas: 40 reservations of 0.25
// USD race on three replicas against a 2 USD daily limit of one client:
// exactly 8 are kept, whatever the interleaving (docs/costs.md "Spend
// limits": a known price is reserved in the check), and the ledger's sum
// is the limit to the micro-unit.
func spendReservationsHoldTheLimitAcrossReplicas(t *testing.T, _ Backend, open func() store.Store, _ *Clock) {
	ctx := context.Background()
	ss := replicas(open, 3)
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	check := func(client string) []toolrouter.SpendCheck {
		return []toolrouter.SpendCheck{{Limit: 2_000_000, Amount: 250_000, Counter: toolrouter.SpendCounter{Scope: toolrouter.ScopeClient,
			Name: client, Currency: "USD", Period: toolrouter.PeriodDay, Start: toolrouter.PeriodStart(toolrouter.PeriodDay, at)}}}
	}
	var mu sync.Mutex
	kept := 0
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := toolrouter.SpendEntry{ID: "tc_" + string(rune('A'+i)), At: at.Add(time.Duration(i) * time.Second), Client: "alice", Tool: "search",
				Currency: "USD", Amount: 250_000}
			refused, err := ss[i%3].ReserveSpend(ctx, e, check("alice"))
			if err != nil {
				t.Error(err)
				return
			}
			if refused < 0 {
				mu.Lock()
				kept++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if kept != 8 {
		t.Fatalf("%d reservations kept, want 8", kept)
	}
	rows, err := ss[1].Usage(ctx, toolrouter.UsageFilter{GroupBy: "client", From: at.Add(-time.Hour), To: at.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Key != "alice" || rows[0].Amount != 2_000_000 || rows[0].Calls != 8 {
		t.Fatalf("usage %+v, want alice 2 USD in 8 calls", rows)
	}
	// At the limit, a call of unknown price (amount 0) is refused too;
	// another client is not.
	zero := check("alice")
	zero[0].Amount = 0
	if i, err := ss[2].ReserveSpend(ctx, toolrouter.SpendEntry{ID: "tc_zero", At: at, Client: "alice", Unpriced: true}, zero); err != nil || i != 0 {
		t.Errorf("reserve at the limit: %d, %v; want refused (0)", i, err)
	}
	if i, err := ss[2].ReserveSpend(ctx, toolrouter.SpendEntry{ID: "tc_bob", At: at, Client: "bob", Currency: "USD", Amount: 250_000}, check("bob")); err != nil || i != -1 {
		t.Errorf("another client: %d, %v; want kept", i, err)
	}
	// The next day starts afresh.
	next := check("alice")
	next[0].Counter.Start = next[0].Counter.Start.AddDate(0, 0, 1)
	if i, err := ss[0].ReserveSpend(ctx, toolrouter.SpendEntry{ID: "tc_next", At: at.AddDate(0, 0, 1), Client: "alice", Currency: "USD", Amount: 250_000}, next); err != nil || i != -1 {
		t.Errorf("next day: %d, %v; want kept", i, err)
	}
}

// spendSettleDropAndUsage: a settled entry replaces its reservation, a
// dropped one is gone, and Usage groups, filters and pages exactly.
func spendSettleDropAndUsage(t *testing.T, _ Backend, open func() store.Store, _ *Clock) {
	ctx := context.Background()
	ss := replicas(open, 2)
	day1 := time.Date(2025, 6, 1, 23, 59, 59, 0, time.UTC)
	day2 := day1.Add(2 * time.Second)
	entries := []toolrouter.SpendEntry{
		{ID: "tc_1", At: day1, Client: "alice", Tool: "search", Currency: "USD", Amount: 2000},
		{ID: "tc_2", At: day2, Client: "alice", Tool: "search", VirtualServer: "research", Currency: "USD", Amount: 1},
		{ID: "tc_3", At: day2, Client: "bob", Tool: "free", Unpriced: true},
		{ID: "run/turn/1", At: day2, Client: "bob", Model: "oa/gpt-4o", RunID: "run", Currency: "USD", Amount: 123,
			Usage: toolrouter.TokenUsage{InputTokens: 30, OutputTokens: 5, CachedInputTokens: 10}},
		{ID: "tc_4", At: day2, Client: "bob", Tool: "search", Currency: "EUR", Amount: 7},
	}
	for _, e := range entries {
		reserved := e
		reserved.Amount = 999_999 // settled below to what it cost
		if i, err := ss[0].ReserveSpend(ctx, reserved, nil); err != nil || i != -1 {
			t.Fatalf("reserve %s: %d, %v", e.ID, i, err)
		}
		if err := ss[1].SettleSpend(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if i, err := ss[0].ReserveSpend(ctx, toolrouter.SpendEntry{ID: "tc_dropped", At: day2, Client: "alice", Tool: "search", Currency: "USD", Amount: 5}, nil); err != nil || i != -1 {
		t.Fatal(i, err)
	}
	if err := ss[1].DropSpend(ctx, toolrouter.SpendKey{ID: "tc_dropped", At: day2}); err != nil {
		t.Fatal(err)
	}
	all := toolrouter.UsageFilter{From: day1.Add(-time.Hour), To: day2.Add(time.Hour)}
	usage := func(f toolrouter.UsageFilter) []toolrouter.UsageRow {
		t.Helper()
		rows, err := ss[0].Usage(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	type row struct {
		key, cur          string
		amount            toolrouter.Micros
		calls, unpriced   int64
		in, out, cachedIn int64
	}
	flat := func(rows []toolrouter.UsageRow) []row {
		out := []row{}
		for _, r := range rows {
			out = append(out, row{r.Key, r.Currency, r.Amount, r.Calls, r.UnpricedCalls, r.InputTokens, r.OutputTokens, r.CachedInputTokens})
		}
		return out
	}
	for _, tc := range []struct {
		f    toolrouter.UsageFilter
		want []row
	}{
		{toolrouter.UsageFilter{GroupBy: "client"}, []row{{"alice", "USD", 2001, 2, 0, 0, 0, 0}, {"bob", "", 0, 1, 1, 0, 0, 0}, {"bob", "EUR", 7, 1, 0, 0, 0, 0}, {"bob", "USD", 123, 1, 0, 30, 5, 10}}},
		{toolrouter.UsageFilter{GroupBy: "tool"}, []row{{"free", "", 0, 1, 1, 0, 0, 0}, {"search", "EUR", 7, 1, 0, 0, 0, 0}, {"search", "USD", 2001, 2, 0, 0, 0, 0}}},
		{toolrouter.UsageFilter{GroupBy: "model"}, []row{{"oa/gpt-4o", "USD", 123, 1, 0, 30, 5, 10}}},
		{toolrouter.UsageFilter{GroupBy: "day", Client: "alice"}, []row{{"2025-06-01", "USD", 2000, 1, 0, 0, 0, 0}, {"2025-06-02", "USD", 1, 1, 0, 0, 0, 0}}},
		{toolrouter.UsageFilter{GroupBy: "virtual_server", Client: "alice"}, []row{{"", "USD", 2000, 1, 0, 0, 0, 0}, {"research", "USD", 1, 1, 0, 0, 0, 0}}},
		{toolrouter.UsageFilter{GroupBy: "client", Limit: 2, After: toolrouter.UsageRow{Key: "bob", Currency: ""}.Cursor()}, []row{{"bob", "EUR", 7, 1, 0, 0, 0, 0}, {"bob", "USD", 123, 1, 0, 30, 5, 10}}},
		{toolrouter.UsageFilter{GroupBy: "client", From: day2, To: day2.Add(time.Second), Client: "alice"}, []row{{"alice", "USD", 1, 1, 0, 0, 0, 0}}},
	} {
		f := tc.f
		if f.From.IsZero() {
			f.From, f.To = all.From, all.To
		}
		if got := flat(usage(f)); !equalRows(got, tc.want) {
			t.Errorf("usage %+v:\n got %+v\nwant %+v", tc.f, got, tc.want)
		}
	}
	costs, err := ss[1].Costs(ctx, []toolrouter.SpendKey{{ID: "tc_1", At: day1}, {ID: "tc_3", At: day2}, {ID: "run/turn/1", At: day2},
		{ID: "tc_dropped", At: day2}, {ID: "tc_4", At: day1}}) // tc_4 started on day2: another entry
	if err != nil {
		t.Fatal(err)
	}
	if len(costs) != 3 || costs["tc_1"].Amount != 2000 || costs["tc_1"].Currency != "USD" || !costs["tc_3"].Unpriced ||
		costs["run/turn/1"].Usage == nil || costs["run/turn/1"].Usage.CachedInputTokens != 10 {
		t.Errorf("costs %+v", costs)
	}
	// Purged: what started before day2, one entry.
	if n, err := ss[0].PurgeSpend(ctx, day2, 10); err != nil || n != 1 {
		t.Errorf("purge: %d %v, want 1", n, err)
	}
	costs, err = ss[1].Costs(ctx, []toolrouter.SpendKey{{ID: "tc_1", At: day1}, {ID: "tc_2", At: day2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(costs) != 1 || costs["tc_2"].Amount != 1 {
		t.Errorf("costs after the purge %+v, want tc_2's only", costs)
	}
}

// spendSettledWithTheResult: the ledger entry an audit record carries
// (its call's settled cost) is written with the record, with its result
// (SaveResult) or without (AppendAudit), replacing the call's reservation;
// the store's own Usage, Costs and ReserveSpend see it at once (they
// flush what it queued), another replica once it is committed, and the
// trail keeps no entry on its records.
func spendSettledWithTheResult(t *testing.T, _ Backend, open func() store.Store, _ *Clock) {
	ctx := context.Background()
	ss := replicas(open, 2)
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	day := toolrouter.UsageFilter{GroupBy: "tool", Client: "alice", From: at.Add(-time.Hour), To: at.Add(time.Hour)}
	limited := toolrouter.SpendEntry{ID: toolrouter.ScopedKey("alice", "tc_limited"), At: at, Client: "alice", Tool: "search", Currency: "USD", Amount: 999_999}
	check := []toolrouter.SpendCheck{{Limit: 1_000_000, Amount: 999_999, Counter: toolrouter.SpendCounter{Scope: toolrouter.ScopeClient,
		Name: "alice", Currency: "USD", Period: toolrouter.PeriodDay, Start: toolrouter.PeriodStart(toolrouter.PeriodDay, at)}}}
	if i, err := ss[0].ReserveSpend(ctx, limited, check); err != nil || i != -1 {
		t.Fatalf("reserve: %d %v", i, err)
	}
	// The limited call ran and cost 0.002 (settled with its result); an
	// unlimited one cost 0.0005, its record written without a result.
	res := sampleResult("tc_limited")
	res.Client = "alice"
	rec := auditRecord(at, "alice", "search", toolrouter.AuditSuccess, res.Sequence)
	rec.ToolCallID = res.ToolCallID
	settled := limited
	settled.Amount = 2000
	rec.Spend = &settled
	if err := ss[0].SaveResult(ctx, res, rec); err != nil {
		t.Fatal(err)
	}
	plain := auditRecord(at.Add(time.Second), "alice", "search", toolrouter.AuditSuccess, res.Sequence+1)
	plain.ToolCallID = "tc_plain"
	plain.Spend = &toolrouter.SpendEntry{ID: toolrouter.ScopedKey("alice", "tc_plain"), At: at.Add(time.Second), Client: "alice", Tool: "search", Currency: "USD", Amount: 500}
	if err := ss[0].AppendAudit(ctx, []toolrouter.AuditRecord{plain}); err != nil {
		t.Fatal(err)
	}
	// The store's own reads see them without a Flush of the caller's.
	rows, err := ss[0].Usage(ctx, day)
	if err != nil || len(rows) != 1 || rows[0].Amount != 2500 || rows[0].Calls != 2 {
		t.Fatalf("usage on the writing store: %+v %v, want search 0.0025 in 2 calls", rows, err)
	}
	ids := []toolrouter.SpendKey{limited.Key(), plain.Spend.Key()}
	costs, err := ss[0].Costs(ctx, ids)
	if err != nil || len(costs) != 2 || costs[limited.ID].Amount != 2000 || costs[plain.Spend.ID].Amount != 500 {
		t.Fatalf("costs on the writing store: %+v %v", costs, err)
	}
	// The limit's check counts the settled cost, not the reservation.
	next := toolrouter.SpendEntry{ID: toolrouter.ScopedKey("alice", "tc_next"), At: at, Client: "alice", Tool: "search", Currency: "USD", Amount: 990_000}
	check[0].Amount = next.Amount
	if i, err := ss[0].ReserveSpend(ctx, next, check); err != nil || i != -1 {
		t.Fatalf("reserve after the settle: %d %v, want kept (0.0025 spent)", i, err)
	}
	if err := ss[0].DropSpend(ctx, next.Key()); err != nil {
		t.Fatal(err)
	}
	// Another replica once committed.
	if err := ss[0].Flush(ctx); err != nil {
		t.Fatal(err)
	}
	costs, err = ss[1].Costs(ctx, ids)
	if err != nil || len(costs) != 2 || costs[limited.ID].Amount != 2000 || costs[plain.Spend.ID].Amount != 500 {
		t.Fatalf("costs on another replica: %+v %v", costs, err)
	}
	recs, err := ss[1].ListAudit(ctx, toolrouter.AuditFilter{Client: "alice"})
	if err != nil || len(recs) != 2 {
		t.Fatalf("audit %+v %v", recs, err)
	}
	for _, r := range recs {
		if r.Spend != nil {
			t.Errorf("record %s keeps its ledger entry", r.ToolCallID)
		}
	}
}

func equalRows[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
