package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestSpendLedgerIsBounded: past MaxAudit entries the oldest are folded
// into rollups: the ledger stays small and every sum, count and limit
// check stays exact.
func TestSpendLedgerIsBounded(t *testing.T) {
	m := New()
	m.MaxAudit = 8
	ctx := context.Background()
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	for i := range 1000 {
		e := toolrouter.SpendEntry{ID: fmt.Sprint("tc_", i), At: at.Add(time.Duration(i) * time.Second), Client: []string{"alice", "bob"}[i%2],
			Tool: "search", Currency: "USD", Amount: 1000, Usage: toolrouter.TokenUsage{InputTokens: 1}}
		if i%10 == 0 {
			e.Currency, e.Amount, e.Unpriced = "", 0, true
		}
		if err := m.SettleSpend(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.spend.live + len(m.spend.rollups); n > 8+4 {
		t.Errorf("%d entries kept, want at most 8 and the rollups", n)
	}
	rows, err := m.Usage(ctx, toolrouter.UsageFilter{GroupBy: "client", From: at, To: at.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	want := "[{alice  0 100 100 {100 0 0}} {alice USD 400 400 0 {400 0 0}} {bob USD 500 500 0 {500 0 0}}]" // every tenth call is alice's, unpriced
	type row struct {
		k, c  string
		a     toolrouter.Micros
		n, un int64
		u     toolrouter.TokenUsage
	}
	var got []row
	for _, r := range rows {
		got = append(got, row{r.Key, r.Currency, r.Amount / 1000, r.Calls, r.UnpricedCalls, r.TokenUsage})
	}
	if fmt.Sprint(got) != want {
		t.Errorf("usage %v\nwant  %s", got, want)
	}
	check := toolrouter.SpendCheck{Limit: 500_000, Amount: 1000, Counter: toolrouter.SpendCounter{Scope: toolrouter.ScopeClient, Name: "bob", Currency: "USD",
		Period: toolrouter.PeriodDay, Start: toolrouter.PeriodStart(toolrouter.PeriodDay, at)}}
	if i, err := m.ReserveSpend(ctx, toolrouter.SpendEntry{ID: "over", At: at, Client: "bob", Currency: "USD", Amount: 1000}, []toolrouter.SpendCheck{check}); err != nil || i != 0 {
		t.Errorf("bob at his limit after folding: %d %v, want refused", i, err)
	}
}
