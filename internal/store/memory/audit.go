package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"time"

	sjson "github.com/segmentio/encoding/json"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// auditLog is the in-memory audit trail and rate counters (store.Tenancy);
// guarded by Store.mu. Each record is kept as its JSON in an arena, with
// what ListAudit filters and orders by in a fixed-size entry of recs, so
// that the garbage collector has nothing to scan in the trail (issue 37).
type auditLog struct {
	recs    []auditSlot // in id order
	lastID  int64
	data    arena
	scratch []byte // a record being encoded
	rates   map[string]rateCounter
}

// auditSlot is a record kept: its id and time, and the 64-bit hashes
// (the first of Store.hashKey) of the fields ListAudit compares, which
// pass over most records without decoding them; a record whose hash
// matches is decoded and compared exactly.
type auditSlot struct {
	id                          int64
	sec                         int64 // Time, as time.Unix(sec, nsec)
	nsec                        int32
	tools                       bool // the record lists Tools
	client, tool, name, outcome uint64
	ref                         blobRef
}

func (s *auditSlot) time() time.Time { return time.Unix(s.sec, int64(s.nsec)) }

// ListClientRuns implements store.Tenancy.
func (m *Store) ListClientRuns(_ context.Context, client, planID string, limit int) ([]*toolrouter.Run, error) {
	return m.listRuns(planID, func(r *memRun) bool { return r.client == client }, limit)
}

// AppendAudit implements store.Tenancy.
func (m *Store) AppendAudit(_ context.Context, recs []toolrouter.AuditRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.appendAudit(recs)
}

// appendAudit appends copies of recs, and puts the spend ledger entry a
// record carries (its call's settled cost) in the ledger, in the same
// step; m.mu is held. A record that cannot be encoded (none can: an
// AuditRecord holds no map, channel or function) is an error, the
// records before it kept.
func (m *Store) appendAudit(recs []toolrouter.AuditRecord) error {
	l := &m.audit
	for _, r := range recs {
		spend := r.Spend
		r.Spend = nil // not kept with the record
		r.ID = l.lastID + 1
		b, err := sjson.Append(l.scratch[:0], &r, sjson.EscapeHTML|sjson.SortMapKeys)
		if err != nil {
			return fmt.Errorf("memory: encoding audit record of %q: %w", r.ToolCallID, err)
		}
		l.scratch = b
		l.lastID++
		if spend != nil {
			m.put(*spend)
		}
		l.recs = append(l.recs, auditSlot{id: r.ID, sec: r.Time.Unix(), nsec: int32(r.Time.Nanosecond()), tools: len(r.Tools) > 0,
			client: m.hash(r.Client), tool: m.hash(r.Tool), name: m.hash(r.ToolName), outcome: m.hash(r.Outcome),
			ref: l.data.put(nil, "", b)})
	}
	// Past MaxAudit the oldest records go, an eighth of them at a time
	// (so that the copy is amortised), as the retention sweep deletes
	// those past TOOLROUTER_AUDIT_RETENTION.
	if most := max(m.MaxAudit, 1); len(l.recs) > most+most/8 {
		for _, s := range l.recs[:len(l.recs)-most] {
			l.data.free(s.ref)
		}
		l.recs = append(make([]auditSlot, 0, most+most/8+1), l.recs[len(l.recs)-most:]...)
	}
	return nil
}

// hash is the first half of hashKey(s).
func (m *Store) hash(s string) uint64 { return maphash.String(m.seeds[0], s) }

// ListAudit implements store.Tenancy.
func (m *Store) ListAudit(_ context.Context, f toolrouter.AuditFilter) ([]toolrouter.AuditRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	client, tool, outcome := m.hash(f.Client), m.hash(f.Tool), m.hash(f.Outcome)
	var cand []auditSlot
	for _, s := range m.audit.recs {
		t := s.time()
		if !f.Before.IsZero() && !f.Before.Before(t, strconv.FormatInt(s.id, 10)) || f.Client != "" && s.client != client ||
			f.Tool != "" && s.tool != tool && s.name != tool && !s.tools || f.Outcome != "" && s.outcome != outcome ||
			!f.Since.IsZero() && t.Before(f.Since) || !f.Until.IsZero() && !t.Before(f.Until) {
			continue
		}
		cand = append(cand, s)
	}
	// Newest first by time, then id (as the SQL stores order them).
	slices.SortFunc(cand, func(a, b auditSlot) int {
		if c := cmp.Compare(b.sec, a.sec); c != 0 {
			return c
		}
		if c := cmp.Compare(b.nsec, a.nsec); c != 0 {
			return c
		}
		return cmp.Compare(b.id, a.id)
	})
	out := []toolrouter.AuditRecord{}
	for _, s := range cand {
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
		var r toolrouter.AuditRecord
		if err := json.Unmarshal(m.audit.data.get(s.ref), &r); err != nil {
			return nil, fmt.Errorf("memory: audit record %d: %w", s.id, err)
		}
		if f.Client != "" && r.Client != f.Client || f.Outcome != "" && r.Outcome != f.Outcome ||
			f.Tool != "" && r.Tool != f.Tool && r.ToolName != f.Tool && !slices.Contains(r.Tools, f.Tool) {
			continue // another string of the same hash
		}
		out = append(out, r)
	}
	return out, nil
}

// PurgeAudit implements store.Tenancy.
func (m *Store) PurgeAudit(_ context.Context, before time.Time, limit int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := &m.audit
	kept := l.recs[:0]
	n := 0
	for _, s := range l.recs {
		if s.time().Before(before) && n < limit {
			l.data.free(s.ref)
			n++
			continue
		}
		kept = append(kept, s)
	}
	clear(l.recs[len(kept):])
	l.recs = kept
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
