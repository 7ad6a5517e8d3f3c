package memory

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// approvals is the memory store's approvals table: JSON copies by id.
type approvals map[string]storedApproval

// storedApproval is an approval's JSON copy, with what counting a
// client's pending ones and expiring them read (every held call counts
// them, every read of approvals expires them: decoding each approval each
// time made 1,000 holds take 23 s).
type storedApproval struct {
	json    []byte
	client  string
	pending bool
	expires time.Time
}

func (m *Store) approval(id string) (*toolrouter.Approval, error) {
	s, ok := m.approvals[id]
	if !ok {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "approval %q not found", id)
	}
	var a toolrouter.Approval
	if err := json.Unmarshal(s.json, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

func (m *Store) putApproval(a *toolrouter.Approval) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if m.approvals == nil {
		m.approvals = approvals{}
	}
	m.approvals[a.ID] = storedApproval{json: b, client: a.Client, pending: a.Status == toolrouter.ApprovalPending, expires: a.ExpiresAt}
	return nil
}

// CreateApproval implements store.Store.
func (m *Store) CreateApproval(_ context.Context, a *toolrouter.Approval) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.approvals[a.ID]; dup {
		return toolrouter.Errorf(toolrouter.ECONFLICT, "approval %q exists", a.ID)
	}
	return m.putApproval(a)
}

// GetApproval implements store.Store.
func (m *Store) GetApproval(_ context.Context, id string) (*toolrouter.Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.approval(id)
}

// ListApprovals implements store.Store.
func (m *Store) ListApprovals(_ context.Context, f toolrouter.ApprovalFilter) ([]*toolrouter.Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []*toolrouter.Approval{}
	for id := range m.approvals {
		a, err := m.approval(id)
		if err != nil {
			return nil, err
		}
		if f.Match(a) {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// DecideApproval implements store.Store.
func (m *Store) DecideApproval(_ context.Context, id string, d toolrouter.Decision) (*toolrouter.Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, err := m.approval(id)
	if err != nil {
		return nil, err
	}
	if err := toolrouter.CheckDecision(a, d); err != nil {
		return nil, err
	}
	a.Apply(d)
	return a, m.putApproval(a)
}

// ExpireApprovals implements store.Store.
func (m *Store) ExpireApprovals(_ context.Context, now time.Time) ([]*toolrouter.Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*toolrouter.Approval
	for id, s := range m.approvals {
		if !s.pending || now.Before(s.expires) {
			continue
		}
		a, err := m.approval(id)
		if err != nil {
			return nil, err
		}
		if a.Status == toolrouter.ApprovalPending && !now.Before(a.ExpiresAt) {
			a.Apply(toolrouter.Decision{Status: toolrouter.ApprovalExpired, Reason: "approval expired", At: now})
			if err := m.putApproval(a); err != nil {
				return nil, err
			}
			out = append(out, a)
		}
	}
	return out, nil
}

// CountPendingApprovals implements store.Store.
func (m *Store) CountPendingApprovals(_ context.Context, client string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.approvals {
		if s.pending && s.client == client {
			n++
		}
	}
	return n, nil
}

// PurgeApprovals implements store.Store.
func (m *Store) PurgeApprovals(_ context.Context, before time.Time, limit int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id := range m.approvals {
		if n >= limit {
			break
		}
		a, err := m.approval(id)
		if err != nil {
			return n, err
		}
		if a.Status != toolrouter.ApprovalPending && a.CreatedAt.Before(before) {
			delete(m.approvals, id)
			n++
		}
	}
	return n, nil
}
