package approval

import (
	"context"
	"sync"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// waiters wakes the streams waiting for the decision on a held call when
// this process settles it (issue 21 item 5: 300 idle streams polling the
// store every 250 ms cost ~27 % of a core). A decision on another replica
// is not heard here: such waiters also poll, slowly.
type waiters struct {
	mu sync.Mutex
	m  map[string]*waiter // by the call's store key (client, tool_call_id)
}

type waiter struct {
	ch chan struct{} // closed when the call is settled
	n  int           // watchers
}

// WatchDecision returns a channel closed when this process settles the
// held call toolCallID of the client in ctx, and a func to call when the
// caller stops waiting.
func (k *Keeper) WatchDecision(ctx context.Context, toolCallID string) (<-chan struct{}, func()) {
	key := toolrouter.ScopedKey(access.FromContext(ctx).LabelName(), toolCallID)
	w := &k.waiters
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]*waiter{}
	}
	e := w.m[key]
	if e == nil {
		e = &waiter{ch: make(chan struct{})}
		w.m[key] = e
	}
	e.n++
	return e.ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if e.n--; e.n == 0 && w.m[key] == e {
			delete(w.m, key)
		}
	}
}

// wake tells the watchers of a's call that it is settled.
func (w *waiters) wake(a *toolrouter.Approval) {
	key := toolrouter.ScopedKey(a.Client, a.ToolCallID)
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.m[key]; e != nil {
		close(e.ch)
		delete(w.m, key)
	}
}
