package e2e_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
)

// TestStoreCostKillKeepsKeyedCostsSQLite and …Postgres: kill -9 the
// service while priced calls with an Idempotency-Key are answered; after
// the restart every answered call's ledger entry is there, found by its
// audit record (GET /audit's cost: the ledger is keyed by the call's start
// and id, migration 0130), and GET /usage charges exactly the calls whose
// records were kept (docs/costs.md "The ledger": an entry is committed
// with its result and record, and a keyed call's before its answer).
func TestStoreCostKillKeepsKeyedCostsSQLite(t *testing.T) {
	t.Parallel()
	storeCostKillKeepsKeyedCosts(t, "sqlite://"+filepath.Join(t.TempDir(), "toolrouter.db"))
}

func TestStoreCostKillKeepsKeyedCostsPostgres(t *testing.T) {
	t.Parallel()
	storeCostKillKeepsKeyedCosts(t, pgtest.Start(t))
}

func storeCostKillKeepsKeyedCosts(t *testing.T, storeURL string) {
	tools := startTools(t)
	reg := fmt.Sprintf("tools:\n  - {name: echo, endpoint: http://%s/echo, cost: {per_call: 0.002}}\n", tools.addr)
	env := []string{"TOOLROUTER_STORE=" + storeURL, "TOOLROUTER_LOG_LEVEL=warn"}
	calls, second := crashBurst(t, reg, env, "ledger", 6, 40, func(w, i int) string { return fmt.Sprintf("cost-%d-%d", w, i) })
	answered := map[string]string{} // tool_call_id -> Idempotency-Key
	for _, c := range calls {
		answered[c.id] = c.key
	}
	var trail struct {
		Records []struct {
			ToolCallID string `json:"tool_call_id"`
			Cost       *struct {
				Amount   json.Number `json:"amount"`
				Currency string      `json:"currency"`
			} `json:"cost"`
		} `json:"records"`
		NextCursor *string `json:"next_cursor"`
	}
	a := do(t, "GET", second.URL()+"/audit?limit=1000", nil)
	if a.Status != 200 {
		t.Fatalf("/audit: %d %s", a.Status, a.Body)
	}
	costDecode(t, a.Body, &trail)
	if trail.NextCursor != nil {
		t.Fatalf("more than 1,000 audit records: the test expects one page")
	}
	kept := 0
	for _, r := range trail.Records {
		if r.Cost == nil || r.Cost.Amount != "0.002" || r.Cost.Currency != "USD" {
			t.Errorf("audit record %s after the crash: cost %+v, want 0.002 USD from the ledger", r.ToolCallID, r.Cost)
		}
		kept++
		delete(answered, r.ToolCallID)
	}
	for id, key := range answered {
		t.Errorf("call %s (key %s) was answered before the crash; its audit record and ledger entry are gone", id, key)
	}
	want := fmt.Sprintf("echo USD %d %d 0", 2000*kept, kept)
	now := time.Now().UTC()
	window := "&from=" + now.Add(-time.Hour).Format(time.RFC3339) + "&to=" + now.Add(time.Hour).Format(time.RFC3339)
	if got := costUsage(t, second, "group_by=tool"+window, nil); len(got) != 1 || got[0] != want {
		t.Errorf("/usage by tool after the crash: %q, want %q (every kept record charged once, nothing else)", got, want)
	}
}
