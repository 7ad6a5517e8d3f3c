package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestGroupCommitSettlesSpend: the ledger entries the audit records of a
// group commit carry are upserted by one statement: every column as
// SettleSpend writes it, an entry settled twice in the group keeps its
// last amount, and a reservation is replaced.
func TestGroupCommitSettlesSpend(t *testing.T) {
	ctx := context.Background()
	p, err := Open(ctx, pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	at := time.Date(2026, 12, 7, 23, 59, 59, 0, time.UTC)
	entry := func(i int, amount toolrouter.Micros) *toolrouter.SpendEntry {
		return &toolrouter.SpendEntry{ID: fmt.Sprintf("alice\x1ftc_%d", i), At: at, Client: "alice", VirtualServer: "research", Tool: "search",
			RunID: "run_1", Currency: "EUR", Amount: amount, Usage: toolrouter.TokenUsage{InputTokens: 3, OutputTokens: 2, CachedInputTokens: 1}}
	}
	reserved := entry(0, 900_000)
	if i, err := p.ReserveSpend(ctx, *reserved, nil); err != nil || i != -1 {
		t.Fatal(i, err)
	}
	const n = 70
	var recs []toolrouter.AuditRecord
	for i := range n {
		seq := int64(i)
		recs = append(recs, toolrouter.AuditRecord{Time: at, Client: "alice", EntryPoint: toolrouter.EntryRoute, PlanID: "p", Sequence: &seq,
			ToolCallID: fmt.Sprintf("tc_%d", i), ToolName: "search", Tool: "search", Outcome: toolrouter.AuditSuccess, Spend: entry(i, toolrouter.Micros(i+1))})
	}
	again := recs[5]
	again.Spend = entry(5, 777)
	recs = append(recs, again)
	if err := p.commit(ctx, auditWrites(recs)); err != nil {
		t.Fatal(err)
	}
	// The same entries written one by one, as a model turn's are, for the
	// columns to compare with.
	for i := range n {
		e := entry(i, toolrouter.Micros(i+1))
		if i == 5 {
			e.Amount = 777
		}
		e.ID = "ref\x1f" + e.ID
		if err := p.SettleSpend(ctx, *e); err != nil {
			t.Fatal(err)
		}
	}
	var diff, rows, sum int64
	if err := p.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM spend a JOIN spend b ON b.id = 'ref' || chr(31) || a.id
			WHERE (a.at_us, a.day, a.client, a.virtual_server, a.tool, a.model, a.run_id, a.currency, a.amount, a.unpriced, a.input_tokens, a.output_tokens, a.cached_tokens)
			IS DISTINCT FROM (b.at_us, b.day, b.client, b.virtual_server, b.tool, b.model, b.run_id, b.currency, b.amount, b.unpriced, b.input_tokens, b.output_tokens, b.cached_tokens)),
		(SELECT count(*) FROM spend WHERE id NOT LIKE 'ref%'),
		(SELECT sum(amount) FROM spend WHERE id NOT LIKE 'ref%')`).Scan(&diff, &rows, &sum); err != nil {
		t.Fatal(err)
	}
	// 1+2+...+70, with tc_5's 6 settled again to 777.
	if want := int64(n*(n+1)/2 - 6 + 777); diff != 0 || rows != n || sum != want {
		t.Errorf("%d entries differing from SettleSpend's, %d entries, sum %d; want 0, %d, %d", diff, rows, sum, n, want)
	}
}
