package memory

import (
	"context"
	"slices"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// spendLedger is the spend ledger: entries by id.
type spendLedger map[string]toolrouter.SpendEntry

// spent is what c's counter has spent; m.mu is held.
func (m *Store) spent(c toolrouter.SpendCounter) toolrouter.Micros {
	var sum toolrouter.Micros
	for _, e := range m.spend {
		name := e.Client
		if c.Scope == toolrouter.ScopeVirtualServer {
			name = e.VirtualServer
		}
		if name == c.Name && e.Currency == c.Currency && !e.At.Before(c.Start) {
			sum += e.Amount
		}
	}
	return sum
}

// ReserveSpend implements store.Spend.
func (m *Store) ReserveSpend(_ context.Context, e toolrouter.SpendEntry, checks []toolrouter.SpendCheck) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, c := range checks {
		if c.Refuses(m.spent(c.Counter)) {
			return i, nil
		}
	}
	if m.spend == nil {
		m.spend = spendLedger{}
	}
	m.spend[e.ID] = e
	return -1, nil
}

// SettleSpend implements store.Spend.
func (m *Store) SettleSpend(_ context.Context, e toolrouter.SpendEntry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.spend == nil {
		m.spend = spendLedger{}
	}
	m.spend[e.ID] = e
	return nil
}

// DropSpend implements store.Spend.
func (m *Store) DropSpend(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.spend, id)
	return nil
}

// Usage implements store.Spend.
func (m *Store) Usage(_ context.Context, f toolrouter.UsageFilter) ([]toolrouter.UsageRow, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	groups := map[[2]string]*toolrouter.UsageRow{}
	for _, e := range m.spend {
		at := e.At.UTC()
		if !f.From.IsZero() && at.Before(f.From) || !f.To.IsZero() && !at.Before(f.To) || f.Client != "" && e.Client != f.Client {
			continue
		}
		var key string
		switch f.GroupBy {
		case "client":
			key = e.Client
		case "tool":
			key = e.Tool
		case "model":
			key = e.Model
		case "day":
			key = at.Format("2006-01-02")
		case "virtual_server":
			key = e.VirtualServer
		}
		if key == "" && (f.GroupBy == "tool" || f.GroupBy == "model") {
			continue
		}
		k := [2]string{key, e.Currency}
		r := groups[k]
		if r == nil {
			r = &toolrouter.UsageRow{Key: key, Currency: e.Currency}
			groups[k] = r
		}
		r.Amount += e.Amount
		r.Calls++
		if e.Unpriced {
			r.UnpricedCalls++
		}
		r.InputTokens += e.Usage.InputTokens
		r.OutputTokens += e.Usage.OutputTokens
		r.CachedInputTokens += e.Usage.CachedInputTokens
	}
	out := make([]toolrouter.UsageRow, 0, len(groups))
	for _, r := range groups {
		if f.After == "" || r.Cursor() > f.After {
			out = append(out, *r)
		}
	}
	slices.SortFunc(out, func(a, b toolrouter.UsageRow) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return strings.Compare(a.Currency, b.Currency)
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// Costs implements store.Spend.
func (m *Store) Costs(_ context.Context, ids []string) (map[string]toolrouter.Cost, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]toolrouter.Cost{}
	for _, id := range ids {
		if e, ok := m.spend[id]; ok {
			out[id] = CostOfEntry(e)
		}
	}
	return out, nil
}

// CostOfEntry is the cost a ledger entry records.
func CostOfEntry(e toolrouter.SpendEntry) toolrouter.Cost {
	c := toolrouter.Cost{Amount: e.Amount, Currency: e.Currency, Unpriced: e.Unpriced}
	if e.Model != "" {
		u := e.Usage
		c.Usage = &u
	}
	return c
}
