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
	// ModelTurns makes it count model turns against Client.ModelTurns
	// instead of tool calls against Client.Rate.
	ModelTurns bool
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
	rate, kind := limitOf(c, s.ModelTurns)
	if rate.IsZero() {
		return Verdict{Allowed: true}, nil
	}
	n = max(n, 1)
	now := time.Now()
	start := now.Truncate(rate.Window)
	// A reload that changes the rate starts afresh, as in Window.
	used, ok, err := s.counter.TakeRate(ctx, c.Name+"\x1f"+rate.String()+kind, start, n, rate.N)
	if err != nil {
		return Verdict{}, fmt.Errorf("rate limit counter of client %q: %w", c.Name, err)
	}
	v := Verdict{Allowed: ok, Rate: rate, Remaining: max(rate.N-used, 0), Reset: start.Add(rate.Window).Sub(now)}
	if !ok && s.OnLimited != nil {
		s.OnLimited(c.Name, n)
	}
	return v, nil
}
