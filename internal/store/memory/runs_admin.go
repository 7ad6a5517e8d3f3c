package memory

import (
	"context"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Heartbeat implements store.RunAdmin.
func (m *Store) Heartbeat(_ context.Context, runID string, at time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[runID]
	if !ok || r.status != toolrouter.RunRunning {
		return false, nil
	}
	c := *r // readers decode a memRun outside the lock: replace, never mutate
	c.heartbeat = at
	m.runs[runID] = &c
	return r.cancel, nil
}

// RequestCancel implements store.RunAdmin.
func (m *Store) RequestCancel(ctx context.Context, runID string) (*toolrouter.Run, error) {
	m.mu.Lock()
	if r, ok := m.runs[runID]; ok && r.status == toolrouter.RunRunning {
		c := *r
		c.cancel = true
		m.runs[runID] = &c
	}
	m.mu.Unlock()
	return m.GetRun(ctx, runID)
}

// DeleteResultsBefore implements store.RunAdmin.
func (m *Store) DeleteResultsBefore(_ context.Context, before time.Time, limit int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deleteResultsBefore(before, limit), nil
}

// DeleteRunsBefore implements store.RunAdmin.
func (m *Store) DeleteRunsBefore(_ context.Context, before time.Time, limit int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, r := range m.runs {
		if n == limit {
			break
		}
		if r.status != toolrouter.RunRunning && r.status != toolrouter.RunAwaitingApproval && r.heartbeat.Before(before) {
			delete(m.runs, id)
			n++
		}
	}
	return n, nil
}

// TransitionRun implements store.RunAdmin.
func (m *Store) TransitionRun(_ context.Context, run *toolrouter.Run, from toolrouter.RunStatus) (bool, error) {
	b, err := toolrouter.EncodeStored(run)
	if err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[run.RunID]
	if !ok || r.status != from {
		return false, nil
	}
	c := *r
	c.data, c.status, c.owner, c.heartbeat, c.cancel = b, run.Status, run.Owner, run.HeartbeatAt, false
	m.runs[run.RunID] = &c
	return true, nil
}
