package memory

import (
	"context"
	"sort"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

func (m *Store) liveSecret(kind, key string) (toolrouter.SealedSecret, bool) {
	s, ok := m.secrets[[2]string{kind, key}]
	if !ok || (!s.ExpiresAt.IsZero() && !s.ExpiresAt.After(m.Now())) {
		return toolrouter.SealedSecret{}, false
	}
	return s, true
}

// PutSecret implements store.Secrets.
func (m *Store) PutSecret(_ context.Context, s *toolrouter.SealedSecret) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.Now()
	for k, v := range m.secrets {
		if !v.ExpiresAt.IsZero() && !v.ExpiresAt.After(now) {
			delete(m.secrets, k)
		}
	}
	if m.secrets == nil {
		m.secrets = map[[2]string]toolrouter.SealedSecret{}
	}
	c := *s
	c.UpdatedAt = now
	m.secrets[[2]string{s.Kind, s.Key}] = c
	return nil
}

// GetSecret implements store.Secrets.
func (m *Store) GetSecret(_ context.Context, kind, key string) (*toolrouter.SealedSecret, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.liveSecret(kind, key)
	if !ok {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "secret not found")
	}
	return &s, nil
}

// TakeSecret implements store.Secrets.
func (m *Store) TakeSecret(_ context.Context, kind, key string) (*toolrouter.SealedSecret, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.liveSecret(kind, key)
	delete(m.secrets, [2]string{kind, key})
	if !ok {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "secret not found")
	}
	return &s, nil
}

// ListSecrets implements store.Secrets.
func (m *Store) ListSecrets(_ context.Context, kind, owner string) ([]*toolrouter.SealedSecret, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*toolrouter.SealedSecret
	for k := range m.secrets {
		if k[0] != kind {
			continue
		}
		if s, ok := m.liveSecret(k[0], k[1]); ok && s.Owner == owner {
			out = append(out, &s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// DeleteSecret implements store.Secrets.
func (m *Store) DeleteSecret(_ context.Context, kind, key string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.liveSecret(kind, key)
	delete(m.secrets, [2]string{kind, key})
	return ok, nil
}
