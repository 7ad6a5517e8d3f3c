package memory

import (
	"context"
	"time"
)

type mark struct {
	value   string
	expires time.Time
}

// PutMark implements store.Marks.
func (m *Store) PutMark(_ context.Context, key, value string, expires time.Time) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.Now()
	for k, mk := range m.marks {
		if !mk.expires.After(now) {
			delete(m.marks, k)
		}
	}
	if mk, ok := m.marks[key]; ok {
		return mk.value, nil
	}
	if m.marks == nil {
		m.marks = map[string]mark{}
	}
	m.marks[key] = mark{value, expires}
	return value, nil
}

// GetMark implements store.Marks.
func (m *Store) GetMark(_ context.Context, key string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mk, ok := m.marks[key]
	if !ok || !mk.expires.After(m.Now()) {
		return "", false, nil
	}
	return mk.value, true, nil
}
