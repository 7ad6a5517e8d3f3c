package memory

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// spendLedger is the spend ledger: entries by key (ledgerKey), and the keys in the
// order they came, oldest first (order[:head] are gone). Past MaxAudit
// entries the oldest are folded into rollups, one per client, virtual
// server, tool, model, hour, currency and pricing, which are never folded:
// memory stays bounded (as the audit trail's, issue 37) and every sum
// stays exact for windows of whole hours (GET /usage's from and to) and
// the limits' days and months; only the cost of a folded call by its id is
// forgotten.
type spendLedger struct {
	entries map[string]*memSpend
	order   []string
	head    int
}

// memSpend is a ledger entry standing for n calls or turns (a rollup's n
// is how many it folded).
type memSpend struct {
	e toolrouter.SpendEntry
	n int64
}

// ledgerKey is the map key of the entry of k: its id and start, to the
// microsecond, as the SQL stores key it.
func ledgerKey(k toolrouter.SpendKey) string {
	return k.ID + "\x00" + strconv.FormatInt(k.At.UnixMicro(), 10)
}

// put stores e under its key; m.mu is held.
func (m *Store) put(e toolrouter.SpendEntry) {
	l := &m.spend
	if l.entries == nil {
		l.entries = map[string]*memSpend{}
	}
	k := ledgerKey(e.Key())
	if old, ok := l.entries[k]; ok {
		old.e = e
		return
	}
	l.entries[k] = &memSpend{e: e, n: 1}
	l.order = append(l.order, k)
	for most := max(m.MaxAudit, 1); len(l.order)-l.head > most; l.head++ {
		id := l.order[l.head]
		old, ok := l.entries[id]
		if !ok {
			continue // dropped
		}
		delete(l.entries, id)
		o := old.e
		key := "\x00rollup\x1f" + o.Client + "\x1f" + o.VirtualServer + "\x1f" + o.Tool + "\x1f" + o.Model + "\x1f" + o.At.UTC().Format("2006-01-02T15") + "\x1f" + o.Currency
		if o.Unpriced {
			key += "\x1funpriced"
		}
		r, ok := l.entries[key]
		if !ok {
			hour := o.At.UTC().Truncate(time.Hour)
			r = &memSpend{e: toolrouter.SpendEntry{ID: key, At: hour, Client: o.Client, VirtualServer: o.VirtualServer, Tool: o.Tool,
				Model: o.Model, Currency: o.Currency, Unpriced: o.Unpriced}}
			l.entries[key] = r
		}
		r.n += old.n
		r.e.Amount += o.Amount
		r.e.Usage.InputTokens += o.Usage.InputTokens
		r.e.Usage.OutputTokens += o.Usage.OutputTokens
		r.e.Usage.CachedInputTokens += o.Usage.CachedInputTokens
	}
	if l.head > len(l.order)/2 {
		l.order = append([]string(nil), l.order[l.head:]...)
		l.head = 0
	}
}

// spent is what c's counter has spent; m.mu is held.
func (m *Store) spent(c toolrouter.SpendCounter) toolrouter.Micros {
	var sum toolrouter.Micros
	for _, x := range m.spend.entries {
		e := x.e
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
	m.put(e)
	return -1, nil
}

// SettleSpend implements store.Spend.
func (m *Store) SettleSpend(_ context.Context, e toolrouter.SpendEntry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.put(e)
	return nil
}

// DropSpend implements store.Spend.
func (m *Store) DropSpend(_ context.Context, k toolrouter.SpendKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.spend.entries, ledgerKey(k))
	return nil
}

// Usage implements store.Spend.
func (m *Store) Usage(_ context.Context, f toolrouter.UsageFilter) ([]toolrouter.UsageRow, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	groups := map[[2]string]*toolrouter.UsageRow{}
	for _, x := range m.spend.entries {
		e := x.e
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
		r.Calls += x.n
		if e.Unpriced {
			r.UnpricedCalls += x.n
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
func (m *Store) Costs(_ context.Context, keys []toolrouter.SpendKey) (map[string]toolrouter.Cost, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]toolrouter.Cost{}
	for _, k := range keys {
		if x, ok := m.spend.entries[ledgerKey(k)]; ok {
			out[k.ID] = CostOfEntry(x.e)
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

// PurgeSpend implements store.Spend.
func (m *Store) PurgeSpend(_ context.Context, before time.Time, limit int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, x := range m.spend.entries {
		if n == limit {
			break
		}
		if x.e.At.Before(before) {
			delete(m.spend.entries, id)
			n++
		}
	}
	return n, nil
}
