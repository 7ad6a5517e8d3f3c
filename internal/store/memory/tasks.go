package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

type memTask struct {
	data []byte // the task's JSON, with Client in client
	// client is the task's owner (not in its JSON).
	client string
	beat   time.Time
}

func (m *Store) loadTask(id string) (*toolrouter.Task, *memTask, error) {
	mt, ok := m.tasks[id]
	if !ok {
		return nil, nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "task %q not found", id)
	}
	t := &toolrouter.Task{}
	if err := json.Unmarshal(mt.data, t); err != nil {
		return nil, nil, fmt.Errorf("memory task %q: %w", id, err)
	}
	t.Client = mt.client
	return t, mt, nil
}

func (m *Store) storeTask(t *toolrouter.Task, beat time.Time) error {
	b, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("memory task %q: %w", t.TaskID, err)
	}
	if m.tasks == nil {
		m.tasks = map[string]*memTask{}
	}
	m.tasks[t.TaskID] = &memTask{data: b, client: t.Client, beat: beat}
	return nil
}

// CreateTask implements store.Tasks.
func (m *Store) CreateTask(_ context.Context, t *toolrouter.Task, beat time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.tasks[t.TaskID]; ok {
		return fmt.Errorf("memory create task: %q exists", t.TaskID)
	}
	return m.storeTask(t, beat)
}

// GetTask implements store.Tasks.
func (m *Store) GetTask(_ context.Context, id string) (*toolrouter.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, _, err := m.loadTask(id)
	return t, err
}

// BeatTask implements store.Tasks.
func (m *Store) BeatTask(_ context.Context, id string, beat time.Time, progress *toolrouter.TaskProgress, status toolrouter.TaskStatus, message string) (bool, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, _, err := m.loadTask(id)
	if err != nil || t.Status.Terminal() {
		return false, false, nil
	}
	if progress != nil {
		t.Progress, t.UpdatedAt = progress, beat
	}
	if status != "" {
		t.Status, t.StatusMessage, t.UpdatedAt = status, message, beat
	}
	return t.CancelRequested, true, m.storeTask(t, beat)
}

// SaveTask implements store.Tasks.
func (m *Store) SaveTask(_ context.Context, t *toolrouter.Task) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, mt, err := m.loadTask(t.TaskID)
	if err != nil || cur.Status.Terminal() {
		return false, nil
	}
	done := *t
	done.CancelRequested = cur.CancelRequested
	return true, m.storeTask(&done, mt.beat)
}

// RequestTaskCancel implements store.Tasks.
func (m *Store) RequestTaskCancel(_ context.Context, id string, now time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, mt, err := m.loadTask(id)
	if err != nil || t.Status.Terminal() {
		return false, nil
	}
	t.CancelRequested, t.UpdatedAt = true, now
	return true, m.storeTask(t, mt.beat)
}

// FailStaleTasks implements store.Tasks.
func (m *Store) FailStaleTasks(_ context.Context, before, now time.Time, reason string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, mt := range m.tasks {
		t, _, err := m.loadTask(id)
		if err != nil || t.Status != toolrouter.TaskWorking || !mt.beat.Before(before) {
			continue
		}
		t.Status, t.StatusMessage, t.Error, t.UpdatedAt = toolrouter.TaskFailed, reason, reason, now
		if err := m.storeTask(t, mt.beat); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// DeleteTasksBefore implements store.Tasks.
func (m *Store) DeleteTasksBefore(_ context.Context, before time.Time, limit int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, mt := range m.tasks {
		if n >= limit {
			break
		}
		t, _, err := m.loadTask(id)
		if err == nil && t.UpdatedAt.Before(before) && mt.beat.Before(before) {
			delete(m.tasks, id)
			n++
		}
	}
	return n, nil
}
