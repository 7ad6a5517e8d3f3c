// Package store keeps what must outlive a request and be shared by replicas:
// per-plan sequences (and, later, route results and runs).
package store

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Store is what toolrouterd persists.
type Store interface {
	// NextSequence allocates the next sequence of a plan, from 0, never
	// handing out the same number twice.
	NextSequence(ctx context.Context, planID string) (int64, error)
	// Ping reports whether the store is reachable.
	Ping(ctx context.Context) error
	Close() error
}

// Open opens the store named by a TOOLROUTER_STORE URL.
func Open(ctx context.Context, url string) (Store, error) {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return nil, fmt.Errorf("store %q: want memory://, sqlite://PATH or postgres://…", url)
	}
	switch scheme {
	case "memory":
		return NewMemory(), nil
	case "sqlite":
		return OpenSQLite(ctx, sqlitePath(rest))
	}
	return nil, fmt.Errorf("store %q: unsupported scheme %q (want memory, sqlite or postgres)", url, scheme)
}

// Memory is an in-process store for tests and single-node runs that need no
// durability.
type Memory struct {
	mu   sync.Mutex
	next map[string]int64
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{next: make(map[string]int64)} }

// NextSequence implements Store.
func (m *Memory) NextSequence(_ context.Context, planID string) (int64, error) {
	if planID == "" {
		return 0, toolrouter.Invalid("plan_id", "plan_id must be a non-empty string")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.next[planID]
	m.next[planID] = n + 1
	return n, nil
}

// Ping implements Store.
func (m *Memory) Ping(context.Context) error { return nil }

// Close implements Store.
func (m *Memory) Close() error { return nil }
