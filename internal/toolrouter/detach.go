package toolrouter

import (
	"context"
	"sync/atomic"
	"time"
)

// SaveTimeout bounds how long a finished call waits to hand its result and
// audit records to the store (the stores queue them, and wait only while
// their queue is full).
const SaveTimeout = 10 * time.Second

// Saves hands out the contexts of result and audit saves: the caller's
// values (logger, trace span) without its cancellation, since a call that
// ran is recorded even if its caller went away, and a deadline between
// SaveTimeout and SaveTimeout+1s away. The saves of one second share that
// deadline (one timer a second rather than a context, a timer and a cancel
// func per save). The zero value is ready to use; it is safe for
// concurrent use.
type Saves struct {
	cur atomic.Pointer[sharedDeadline]
}

type sharedDeadline struct {
	ctx    context.Context
	cancel context.CancelFunc // not called: the context ends at its deadline, after its last save
	until  time.Time          // when the next second's context is made
}

// Context returns the context of a save made on behalf of parent.
func (s *Saves) Context(parent context.Context) context.Context {
	now := time.Now()
	d := s.cur.Load()
	if d == nil || !now.Before(d.until) {
		ctx, cancel := context.WithTimeout(context.Background(), SaveTimeout+time.Second)
		d = &sharedDeadline{ctx: ctx, cancel: cancel, until: now.Add(time.Second)}
		s.cur.Store(d)
	}
	return detached{vals: parent, deadline: d.ctx}
}

// detached is context.WithoutCancel(vals) bounded by deadline: Deadline,
// Done and Err are deadline's; values are looked up in deadline first
// (which answers only the context package's own key, so that a context
// derived from this one is cancelled with deadline), then in vals.
type detached struct {
	vals, deadline context.Context
}

func (c detached) Deadline() (time.Time, bool) { return c.deadline.Deadline() }
func (c detached) Done() <-chan struct{}       { return c.deadline.Done() }
func (c detached) Err() error                  { return c.deadline.Err() }
func (c detached) Value(key any) any {
	if v := c.deadline.Value(key); v != nil {
		return v
	}
	return c.vals.Value(key)
}
