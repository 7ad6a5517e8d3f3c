package registry

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Holder keeps the registry in force and swaps it atomically on reload.
// Readers call Current for every request and never see a half-built
// registry.
//
// The registry in force is the registry file's plus the extra tools set
// with SetExtra (the tools discovered on MCP servers); a reload and a
// change of the extra tools each recombine the two atomically.
type Holder struct {
	path   string
	getenv func(string) string
	cur    atomic.Pointer[Registry]
	mu     sync.Mutex // serializes reloads and SetExtra so an older state never wins
	file   *Registry  // the registry file's registry; guarded by mu
	extra  []*toolrouter.Tool
}

// NewHolder returns a Holder serving initial (Empty when nil) that
// reloads from path.
func NewHolder(path string, getenv func(string) string, initial *Registry) *Holder {
	if initial == nil {
		initial = Empty()
	}
	h := &Holder{path: path, getenv: getenv, file: initial}
	h.cur.Store(initial)
	return h
}

// Current returns the registry in force.
func (h *Holder) Current() *Registry {
	return h.cur.Load()
}

// Reload parses the file again. On success the new registry, with the
// extra tools, replaces the old one; on error the old one stays in force
// and the error (Problems for a bad file) is returned. Extra tools that
// collide with the new file's tools are left out silently: SetExtra
// reports them.
func (h *Holder) Reload() error { return h.ReloadIf(nil) }

// ReloadIf is Reload that swaps the new registry in only when accept (when
// not nil) returns nil for it; accept's error is returned as it is.
func (h *Holder) ReloadIf(accept func(*Registry) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, err := Load(h.path, h.getenv)
	if err != nil {
		return err
	}
	if accept != nil {
		if err := accept(r); err != nil {
			return err
		}
	}
	h.file = r
	_ = h.store() // collisions are SetExtra's to report
	return nil
}

// SetExtra replaces the extra tools that join the file's tools and swaps
// in the combined registry. Extra tools that collide with file tools (or
// with each other) are left out; the error, when not nil, lists them (see
// Registry.WithTools) and is meant to be logged.
func (h *Holder) SetExtra(tools []*toolrouter.Tool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.extra = slices.Clone(tools)
	return h.store()
}

// store swaps in the file's registry combined with the extra tools; h.mu
// is held.
func (h *Holder) store() error {
	if len(h.extra) == 0 {
		h.cur.Store(h.file)
		return nil
	}
	r, err := h.file.WithTools(h.extra)
	h.cur.Store(r)
	return err
}
