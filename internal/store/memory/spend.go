package memory

import (
	"context"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"strings"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// spendLedger is the spend ledger: entries in the order they came,
// oldest first, and the rollups. Past MaxAudit entries the oldest are
// folded into rollups, one per client, virtual server, tool, model, hour,
// currency and pricing, which are never folded: memory stays bounded (as
// the audit trail's, issue 37) and every sum stays exact for windows of
// whole hours (GET /usage's from and to) and the limits' days and months;
// only the cost of a folded call by its id is forgotten.
//
// An entry is kept as the audit trail's records are (audit.go): its
// strings in an arena, its time, amount and usage in a fixed-size slot,
// found through a map of fixed-size keys (spendKey), so that the garbage
// collector has nothing to scan in it (issue 37). Rollups, a few per
// hour, are kept as values.
type spendLedger struct {
	slotIndex[spendSlot] // spendKey → place in the order of storing
	data                 arena
	rollups              map[string]*memSpend
}

type spendSlot struct {
	key      [2]uint64
	sec      int64 // At, as time.Unix(sec, nsec)
	nsec     int32
	unpriced bool
	dead     bool
	amount   toolrouter.Micros
	usage    toolrouter.TokenUsage
	ref      blobRef // spendFields: the entry's strings
}

func (s spendSlot) state() ([2]uint64, bool) { return s.key, s.dead }

func (s *spendSlot) at() time.Time { return time.Unix(s.sec, int64(s.nsec)) }

// spendFields are the strings of an entry, in its record in the arena in
// this order, each after its length (uvarint).
const (
	fieldID = iota
	fieldClient
	fieldVirtualServer
	fieldTool
	fieldModel
	fieldRunID
	fieldCurrency
	spendFields
)

// memSpend is a rollup standing for n calls or turns.
type memSpend struct {
	e toolrouter.SpendEntry
	n int64
}

// spendKey is the fixed-size key of the entry of k: its id and start, to
// the microsecond, as the SQL stores key it (hashed as Store.hashKey).
func (m *Store) spendKey(k toolrouter.SpendKey) [2]uint64 {
	v := struct {
		id string
		us int64
	}{k.ID, k.At.UnixMicro()}
	return [2]uint64{maphash.Comparable(m.seeds[0], v), maphash.Comparable(m.seeds[1], v)}
}

// fields are the strings of s's entry, not to be changed; m.mu is held.
func (l *spendLedger) fields(s *spendSlot) (f [spendFields][]byte) {
	b := l.data.get(s.ref)
	for i := range f {
		n, w := binary.Uvarint(b)
		f[i], b = b[w:w+int(n)], b[w+int(n):]
	}
	return f
}

// entry is s's entry; m.mu is held.
func (l *spendLedger) entry(s *spendSlot) toolrouter.SpendEntry {
	f := l.fields(s)
	return toolrouter.SpendEntry{ID: string(f[fieldID]), At: s.at(), Client: string(f[fieldClient]), VirtualServer: string(f[fieldVirtualServer]),
		Tool: string(f[fieldTool]), Model: string(f[fieldModel]), RunID: string(f[fieldRunID]), Currency: string(f[fieldCurrency]),
		Amount: s.amount, Unpriced: s.unpriced, Usage: s.usage}
}

// put stores e under its key; m.mu is held.
func (m *Store) put(e toolrouter.SpendEntry) {
	l := &m.spend
	if l.index == nil {
		l.index = make(map[[2]uint64]int64)
	}
	var rec [128]byte
	b := rec[:0]
	for _, f := range [spendFields]string{e.ID, e.Client, e.VirtualServer, e.Tool, e.Model, e.RunID, e.Currency} {
		b = append(binary.AppendUvarint(b, uint64(len(f))), f...)
	}
	k := m.spendKey(e.Key())
	slot := spendSlot{key: k, sec: e.At.Unix(), nsec: int32(e.At.Nanosecond()), unpriced: e.Unpriced, amount: e.Amount, usage: e.Usage,
		ref: l.data.put(b, "", nil)}
	if at, ok := l.index[k]; ok {
		old := &l.slots[at-l.base]
		l.data.free(old.ref)
		*old = slot
		return
	}
	l.index[k] = l.base + int64(len(l.slots))
	l.slots = append(l.slots, slot)
	l.live++
	for most := max(m.MaxAudit, 1); l.live > most; {
		i := 0
		for l.slots[i].dead {
			i++
		}
		m.fold(&l.slots[i])
		l.drop(i)
	}
	l.compact()
}

// fold adds the entry of s to its rollup; m.mu is held.
func (m *Store) fold(s *spendSlot) {
	l := &m.spend
	if l.rollups == nil {
		l.rollups = map[string]*memSpend{}
	}
	o := l.entry(s)
	key := "\x00rollup\x1f" + o.Client + "\x1f" + o.VirtualServer + "\x1f" + o.Tool + "\x1f" + o.Model + "\x1f" + o.At.UTC().Format("2006-01-02T15") + "\x1f" + o.Currency
	if o.Unpriced {
		key += "\x1funpriced"
	}
	r, ok := l.rollups[key]
	if !ok {
		hour := o.At.UTC().Truncate(time.Hour)
		r = &memSpend{e: toolrouter.SpendEntry{ID: key, At: hour, Client: o.Client, VirtualServer: o.VirtualServer, Tool: o.Tool,
			Model: o.Model, Currency: o.Currency, Unpriced: o.Unpriced}}
		l.rollups[key] = r
	}
	r.n++
	r.e.Amount += o.Amount
	r.e.Usage.InputTokens += o.Usage.InputTokens
	r.e.Usage.OutputTokens += o.Usage.OutputTokens
	r.e.Usage.CachedInputTokens += o.Usage.CachedInputTokens
}

// drop deletes the entry in slots[i]; m.mu is held.
func (l *spendLedger) drop(i int) {
	s := &l.slots[i]
	delete(l.index, s.key)
	l.data.free(s.ref)
	*s = spendSlot{dead: true}
	l.live--
}

// spent is what c's counter has spent; m.mu is held.
func (m *Store) spent(c toolrouter.SpendCounter) toolrouter.Micros {
	var sum toolrouter.Micros
	field := fieldClient
	if c.Scope == toolrouter.ScopeVirtualServer {
		field = fieldVirtualServer
	}
	l := &m.spend
	for i := range l.slots {
		s := &l.slots[i]
		if s.dead || s.at().Before(c.Start) {
			continue
		}
		if f := l.fields(s); string(f[field]) == c.Name && string(f[fieldCurrency]) == c.Currency {
			sum += s.amount
		}
	}
	for _, x := range l.rollups {
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

// each calls f with every entry and rollup, and the calls or turns it
// stands for; m.mu is held.
func (l *spendLedger) each(f func(e toolrouter.SpendEntry, n int64)) {
	for i := range l.slots {
		if s := &l.slots[i]; !s.dead {
			f(l.entry(s), 1)
		}
	}
	for _, x := range l.rollups {
		f(x.e, x.n)
	}
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
	l := &m.spend
	if at, ok := l.index[m.spendKey(k)]; ok {
		l.drop(int(at - l.base))
		l.compact()
	}
	return nil
}

// Usage implements store.Spend.
func (m *Store) Usage(_ context.Context, f toolrouter.UsageFilter) ([]toolrouter.UsageRow, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	groups := map[[2]string]*toolrouter.UsageRow{}
	m.spend.each(func(e toolrouter.SpendEntry, n int64) {
		at := e.At.UTC()
		if !f.From.IsZero() && at.Before(f.From) || !f.To.IsZero() && !at.Before(f.To) || f.Client != "" && e.Client != f.Client {
			return
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
			return
		}
		k := [2]string{key, e.Currency}
		r := groups[k]
		if r == nil {
			r = &toolrouter.UsageRow{Key: key, Currency: e.Currency}
			groups[k] = r
		}
		r.Amount += e.Amount
		r.Calls += n
		if e.Unpriced {
			r.UnpricedCalls += n
		}
		r.InputTokens += e.Usage.InputTokens
		r.OutputTokens += e.Usage.OutputTokens
		r.CachedInputTokens += e.Usage.CachedInputTokens
	})
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
		if at, ok := m.spend.index[m.spendKey(k)]; ok {
			out[k.ID] = CostOfEntry(m.spend.entry(&m.spend.slots[at-m.spend.base]))
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
	l, n := &m.spend, 0
	for i := range l.slots {
		if n == limit {
			break
		}
		if s := &l.slots[i]; !s.dead && s.at().Before(before) {
			l.drop(i)
			n++
		}
	}
	for id, x := range l.rollups {
		if n == limit {
			break
		}
		if x.e.At.Before(before) {
			delete(l.rollups, id)
			n++
		}
	}
	l.compact()
	return n, nil
}
