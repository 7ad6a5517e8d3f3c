// Package memory is the in-process store.Store (TOOLROUTER_STORE=memory://):
// nothing survives a restart and replicas cannot share it.
package memory

import (
	"context"
	"encoding/json"
	"hash/maphash"
	"sort"
	"sync"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Store is an in-process store for tests and single-node runs that need no
// durability. Values are copied in and out, as a database would.
type Store struct {
	mu sync.Mutex
	// Now is the clock of key expiry and of the end of interrupted runs;
	// a test may set it before the store is used.
	Now func() time.Time
	// MaxResults and MaxAudit bound what the store keeps: past them the
	// oldest results (audit records) are deleted, as the retention sweep
	// deletes those past TOOLROUTER_RESULT_RETENTION
	// (TOOLROUTER_AUDIT_RETENTION), so that memory stays flat however
	// many calls are routed (issue 37). New sets DefaultMaxResults and
	// DefaultMaxAudit; a test may lower them before the store is used.
	MaxResults, MaxAudit int
	next                 map[string]int64
	res                  resultLog       // results.go
	seeds                [2]maphash.Seed // of the logs' fixed-size keys (hashKey)
	keys                 map[string]*memKey
	runs                 map[string]*memRun
	approvals            approvals
	audit                auditLog                              // audit.go
	pins                 map[[2]string]memPin                  // pins.go
	marks                map[string]mark                       // marks.go
	secrets              map[[2]string]toolrouter.SealedSecret // secrets.go
	tasks                map[string]*memTask                   // tasks.go
	spend                spendLedger                           // spend.go
}

// DefaultMaxResults and DefaultMaxAudit are New's MaxResults and MaxAudit:
// about 64 MB of results and audit records of small calls.
const (
	DefaultMaxResults = 1 << 16
	DefaultMaxAudit   = 1 << 16
)

type memKey struct {
	fingerprint string
	response    []byte // nil while in progress
	expires     time.Time
}

type memRun struct {
	data      []byte
	planID    string
	status    toolrouter.RunStatus
	owner     string
	client    string
	heartbeat time.Time
	created   time.Time
	cancel    bool // cancellation requested (runs_admin.go)
}

// New returns an empty in-memory store.
func New() *Store {
	return &Store{
		Now:        time.Now,
		MaxResults: DefaultMaxResults,
		MaxAudit:   DefaultMaxAudit,
		next:       make(map[string]int64),
		seeds:      [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		keys:       make(map[string]*memKey),
		runs:       make(map[string]*memRun),
	}
}

// NextSequence implements store.Store.
func (m *Store) NextSequence(ctx context.Context, planID string) (int64, error) {
	return m.NextSequences(ctx, planID, 1)
}

// NextSequences implements store.Store.
func (m *Store) NextSequences(_ context.Context, planID string, n int64) (int64, error) {
	if err := toolrouter.CheckSequences(planID, n); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	first := m.next[planID]
	m.next[planID] = first + n
	return first, nil
}

// SaveResult implements store.Store: the result and its audit records
// under one lock.
func (m *Store) SaveResult(_ context.Context, res *toolrouter.Result, audit ...toolrouter.AuditRecord) error {
	b, err := res.Encoded()
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.saveResult(toolrouter.ScopedKey(res.Client, res.ToolCallID), b)
	return m.appendAudit(audit)
}

// GetResult implements store.Store.
func (m *Store) GetResult(_ context.Context, id string) (*toolrouter.Result, error) {
	m.mu.Lock()
	b, ok := m.result(id) // written once, never changed: read outside the lock
	m.mu.Unlock()
	if !ok {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "tool call %q not found", id)
	}
	var res toolrouter.Result
	return &res, json.Unmarshal(b, &res)
}

// ClaimKey implements store.Store.
func (m *Store) ClaimKey(_ context.Context, key, fingerprint string, ttl time.Duration) (toolrouter.Claim, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.Now()
	k, ok := m.keys[key]
	if ok && k.response == nil && now.After(k.expires) && !now.After(k.expires.Add(toolrouter.AbandonedGrace)) {
		if k.fingerprint != fingerprint {
			return toolrouter.Claim{}, toolrouter.ErrKeyReused
		}
		return toolrouter.Claim{State: toolrouter.Abandoned}, nil
	}
	if !ok || now.After(k.expires) {
		m.keys[key] = &memKey{fingerprint: fingerprint, expires: now.Add(ttl)}
		return toolrouter.Claim{State: toolrouter.Claimed}, nil
	}
	if k.fingerprint != fingerprint {
		return toolrouter.Claim{}, toolrouter.ErrKeyReused
	}
	if k.response == nil {
		return toolrouter.Claim{State: toolrouter.InProgress}, nil
	}
	return toolrouter.Claim{State: toolrouter.Answered, Response: append([]byte(nil), k.response...)}, nil
}

// CompleteKey implements store.Store.
func (m *Store) CompleteKey(_ context.Context, key string, response []byte, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if k, ok := m.keys[key]; ok {
		k.response = append([]byte(nil), response...)
		k.expires = m.Now().Add(ttl)
	}
	return nil
}

// RenewKey implements store.Store.
func (m *Store) RenewKey(_ context.Context, key string, lease time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if k, ok := m.keys[key]; ok && k.response == nil {
		k.expires = m.Now().Add(lease)
	}
	return nil
}

// ReleaseKey implements store.Store.
func (m *Store) ReleaseKey(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if k, ok := m.keys[key]; ok && k.response == nil {
		delete(m.keys, key)
	}
	return nil
}

// SaveRun implements store.Store.
func (m *Store) SaveRun(_ context.Context, run *toolrouter.Run) error {
	b, err := toolrouter.EncodeStored(run)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.runs[run.RunID]; ok && old.status != toolrouter.RunRunning && run.Status == toolrouter.RunRunning {
		return nil // a heartbeat never brings an interrupted run back
	}
	m.runs[run.RunID] = &memRun{data: b, planID: run.Context.PlanID, status: run.Status,
		owner: run.Owner, client: run.Client, heartbeat: run.HeartbeatAt, created: run.CreatedAt, cancel: m.runs[run.RunID] != nil && m.runs[run.RunID].cancel}
	return nil
}

// GetRun implements store.Store.
func (m *Store) GetRun(_ context.Context, id string) (*toolrouter.Run, error) {
	m.mu.Lock()
	r, ok := m.runs[id]
	m.mu.Unlock()
	if !ok {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "run %q not found", id)
	}
	return r.decode()
}

func (r *memRun) decode() (*toolrouter.Run, error) {
	run, err := toolrouter.DecodeStored(r.data)
	if err != nil {
		return nil, err
	}
	run.Owner, run.Client, run.HeartbeatAt = r.owner, r.client, r.heartbeat
	return run, nil
}

// ListRuns implements store.Store.
func (m *Store) ListRuns(_ context.Context, planID string, limit int) ([]*toolrouter.Run, error) {
	return m.listRuns(planID, func(*memRun) bool { return true }, limit)
}

func (m *Store) listRuns(planID string, keep func(*memRun) bool, limit int) ([]*toolrouter.Run, error) {
	m.mu.Lock()
	var rs []*memRun
	for _, r := range m.runs {
		if (planID == "" || r.planID == planID) && keep(r) {
			rs = append(rs, r)
		}
	}
	m.mu.Unlock()
	sort.Slice(rs, func(i, j int) bool { return rs[i].created.After(rs[j].created) })
	if limit > 0 && len(rs) > limit {
		rs = rs[:limit]
	}
	out := make([]*toolrouter.Run, 0, len(rs))
	for _, r := range rs {
		run, err := r.decode()
		if err != nil {
			return nil, err
		}
		out = append(out, run)
	}
	return out, nil
}

// InterruptStale implements store.Store.
func (m *Store) InterruptStale(_ context.Context, before time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.runs {
		if r.status != toolrouter.RunRunning || !r.heartbeat.Before(before) {
			continue
		}
		run, err := r.decode()
		if err != nil {
			return n, err
		}
		run.Interrupt(m.Now())
		b, err := json.Marshal(run)
		if err != nil {
			return n, err
		}
		r.data, r.status = b, run.Status
		n++
	}
	return n, nil
}

// Ping implements store.Store.
func (m *Store) Ping(context.Context) error { return nil }

// Flush implements store.Store: nothing is written behind.
func (m *Store) Flush(context.Context) error { return nil }

// Close implements store.Store.
func (m *Store) Close() error { return nil }

// PurgeExpiredKeys deletes expired idempotency keys and returns how many.
func (m *Store) PurgeExpiredKeys(context.Context) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now, n := m.Now(), 0
	for k, v := range m.keys {
		if now.After(v.expires) && (v.response != nil || now.After(v.expires.Add(toolrouter.AbandonedGrace))) {
			delete(m.keys, k)
			n++
		}
	}
	return n, nil
}
