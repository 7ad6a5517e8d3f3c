package memory

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// auditLog is the in-memory audit trail and rate counters (store.Tenancy);
// guarded by Store.mu.
type auditLog struct {
	recs   []toolrouter.AuditRecord // in id order
	lastID int64
	rates  map[string]rateCounter
}

// ListClientRuns implements store.Tenancy.
func (m *Store) ListClientRuns(_ context.Context, client, planID string, limit int) ([]*toolrouter.Run, error) {
	return m.listRuns(planID, func(r *memRun) bool { return r.client == client }, limit)
}

// AppendAudit implements store.Tenancy.
func (m *Store) AppendAudit(_ context.Context, recs []toolrouter.AuditRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.appendAudit(recs)
	return nil
}

// appendAudit appends copies of recs, and puts the spend ledger entry a
// record carries (its call's settled cost) in the ledger, in the same
// step; m.mu is held.
func (m *Store) appendAudit(recs []toolrouter.AuditRecord) {
	for _, r := range recs {
		if r.Spend != nil {
			m.put(*r.Spend)
			r.Spend = nil // not kept with the record
		}
		m.audit.lastID++
		r.ID = m.audit.lastID
		r.Guardrails = slices.Clone(r.Guardrails) // a record is not shared with its writer
		if r.Credential != nil {
			c := *r.Credential
			r.Credential = &c
		}
		if r.Sequence != nil {
			seq := *r.Sequence
			r.Sequence = &seq
		}
		m.audit.recs = append(m.audit.recs, r)
	}
	// Past MaxAudit the oldest records go, an eighth of them at a time
	// (so that the copy is amortised), as the retention sweep deletes
	// those past TOOLROUTER_AUDIT_RETENTION.
	if most := max(m.MaxAudit, 1); len(m.audit.recs) > most+most/8 {
		m.audit.recs = append(make([]toolrouter.AuditRecord, 0, most+most/8+1), m.audit.recs[len(m.audit.recs)-most:]...)
	}
}

// ListAudit implements store.Tenancy.
func (m *Store) ListAudit(_ context.Context, f toolrouter.AuditFilter) ([]toolrouter.AuditRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []toolrouter.AuditRecord{}
	for _, r := range m.audit.recs {
		if !f.Before.Before(r.Time, strconv.FormatInt(r.ID, 10)) || f.Client != "" && r.Client != f.Client ||
			f.Tool != "" && r.Tool != f.Tool && r.ToolName != f.Tool && !slices.Contains(r.Tools, f.Tool) || f.Outcome != "" && r.Outcome != f.Outcome ||
			!f.Since.IsZero() && r.Time.Before(f.Since) || !f.Until.IsZero() && !r.Time.Before(f.Until) {
			continue
		}
		out = append(out, r)
	}
	// Newest first by time, then id (as the SQL stores order them).
	slices.SortFunc(out, func(a, b toolrouter.AuditRecord) int {
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// PurgeAudit implements store.Tenancy.
func (m *Store) PurgeAudit(_ context.Context, before time.Time, limit int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	kept := m.audit.recs[:0]
	n := 0
	for _, r := range m.audit.recs {
		if r.Time.Before(before) && n < limit {
			n++
			continue
		}
		kept = append(kept, r)
	}
	m.audit.recs = kept
	return n, nil
}

// TakeRate implements store.Tenancy.
func (m *Store) TakeRate(_ context.Context, client string, window time.Time, n, quota int) (int, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.audit.rates == nil {
		m.audit.rates = map[string]rateCounter{}
	}
	key := client + "\x1f" + window.UTC().Format(time.RFC3339Nano)
	used := m.audit.rates[key].used
	if used+n > quota {
		return used, false, nil
	}
	m.audit.rates[key] = rateCounter{window, used + n}
	return used + n, true, nil
}

type rateCounter struct {
	window time.Time
	used   int
}

// PurgeRates implements store.Tenancy.
func (m *Store) PurgeRates(_ context.Context, before time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, c := range m.audit.rates {
		if c.window.Before(before) {
			delete(m.audit.rates, k)
			n++
		}
	}
	return n, nil
}
