package access

import (
	"context"
	"fmt"
	"time"
)

// Counter counts a client's calls in a window in a shared store
// (store.Tenancy.TakeRate).
type Counter interface {
	TakeRate(ctx context.Context, client string, window time.Time, n, quota int) (used int, ok bool, err error)
}

// Shared is a fixed-window rate limiter like Window whose counters live in
// a store shared by every replica (PostgreSQL): one counter per client and
// window, one upsert per request, so N replicas together allow a client
// Rate.N calls per window, not N times that.
type Shared struct {
	// OnLimited, when set, is told of every refusal (metrics).
	OnLimited func(client string, calls int)
	counter   Counter
}

// NewShared returns a limiter counting in c.
func NewShared(c Counter) *Shared { return &Shared{counter: c} }

// Take counts n tool calls of c (at least 1): all n are allowed, or none
// is and nothing is counted. A client without a limit (and the caller of
// an open service) is always allowed without asking the store.
func (s *Shared) Take(ctx context.Context, c *Client, n int) (Verdict, error) {
	if c == nil || c.Rate.IsZero() {
		return Verdict{Allowed: true}, nil
	}
	n = max(n, 1)
	now := time.Now()
	start := now.Truncate(c.Rate.Window)
	// A reload that changes the rate starts afresh, as in Window.
	used, ok, err := s.counter.TakeRate(ctx, c.Name+"\x1f"+c.Rate.String(), start, n, c.Rate.N)
	if err != nil {
		return Verdict{}, fmt.Errorf("rate limit counter of client %q: %w", c.Name, err)
	}
	v := Verdict{Allowed: ok, Rate: c.Rate, Remaining: max(c.Rate.N-used, 0), Reset: start.Add(c.Rate.Window).Sub(now)}
	if !ok && s.OnLimited != nil {
		s.OnLimited(c.Name, n)
	}
	return v, nil
}
