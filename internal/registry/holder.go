package registry

import (
	"sync"
	"sync/atomic"
)

// Holder keeps the registry in force and swaps it atomically on reload.
// Readers call Current for every request and never see a half-built
// registry.
type Holder struct {
	path   string
	getenv func(string) string
	cur    atomic.Pointer[Registry]
	mu     sync.Mutex // serializes reloads so an older file never wins
}

// NewHolder returns a Holder serving initial (Empty when nil) that
// reloads from path.
func NewHolder(path string, getenv func(string) string, initial *Registry) *Holder {
	if initial == nil {
		initial = Empty()
	}
	h := &Holder{path: path, getenv: getenv}
	h.cur.Store(initial)
	return h
}

// Current returns the registry in force.
func (h *Holder) Current() *Registry {
	return h.cur.Load()
}

// Reload parses the file again. On success the new registry replaces the
// old one; on error the old one stays in force and the error (Problems for
// a bad file) is returned.
func (h *Holder) Reload() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, err := Load(h.path, h.getenv)
	if err != nil {
		return err
	}
	h.cur.Store(r)
	return nil
}
