package memory

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// memPin is a stored pin: its JSON and version.
type memPin struct {
	version int64
	body    []byte
}

// ListPins implements store.Pins.
func (m *Store) ListPins(context.Context) ([]*toolrouter.Pin, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []*toolrouter.Pin{}
	for _, mp := range m.pins {
		var p toolrouter.Pin
		if err := json.Unmarshal(mp.body, &p); err != nil {
			return nil, err
		}
		p.Version = mp.version
		out = append(out, &p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Server != out[j].Server {
			return out[i].Server < out[j].Server
		}
		return out[i].Tool < out[j].Tool
	})
	return out, nil
}

// CreatePin implements store.Pins.
func (m *Store) CreatePin(_ context.Context, p *toolrouter.Pin) (bool, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{p.Server, p.Tool}
	if _, ok := m.pins[k]; ok {
		return false, nil
	}
	if m.pins == nil {
		m.pins = map[[2]string]memPin{}
	}
	m.pins[k] = memPin{version: 1, body: b}
	p.Version = 1
	return true, nil
}

// UpdatePin implements store.Pins.
func (m *Store) UpdatePin(_ context.Context, p *toolrouter.Pin) (bool, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{p.Server, p.Tool}
	cur, ok := m.pins[k]
	if !ok || cur.version != p.Version {
		return false, nil
	}
	p.Version++
	m.pins[k] = memPin{version: p.Version, body: b}
	return true, nil
}

// DeletePin implements store.Pins.
func (m *Store) DeletePin(_ context.Context, p *toolrouter.Pin) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{p.Server, p.Tool}
	cur, ok := m.pins[k]
	if !ok || cur.version != p.Version {
		return false, nil
	}
	delete(m.pins, k)
	return true, nil
}
