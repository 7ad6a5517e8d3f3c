package access

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Verdict is the answer of a rate limiter to n tool calls of a client.
type Verdict struct {
	Allowed bool
	Rate    toolrouter.Rate
	// Remaining is what is left of the window's quota after this answer.
	Remaining int
	// Reset is the time until the window ends and the quota is full again.
	Reset time.Duration
}

// PolicyName names the rate limit policy in the RateLimit-Policy and
// RateLimit fields.
const PolicyName = "tool-calls"

// SetHeaders writes the fields of the IETF draft "RateLimit header fields
// for HTTP" (draft-ietf-httpapi-ratelimit-headers-09): RateLimit-Policy
// with the quota q and window w (seconds), RateLimit with what remains r
// and the seconds t until the quota resets; and Retry-After when the calls
// were refused (api/openapi.yaml, response TooManyRequests).
func (v Verdict) SetHeaders(h http.Header) {
	if v.Rate.IsZero() {
		return
	}
	reset := ceilSeconds(v.Reset)
	h.Set("RateLimit-Policy", fmt.Sprintf("%q;q=%d;w=%d", PolicyName, v.Rate.N, int(v.Rate.Window/time.Second)))
	h.Set("RateLimit", fmt.Sprintf("%q;r=%d;t=%d", PolicyName, v.Remaining, reset))
	if !v.Allowed {
		h.Set("Retry-After", strconv.Itoa(max(reset, 1)))
	}
}

// Message is the text of a refusal, for problem details and JSON-RPC
// errors.
func (v Verdict) Message(client string) string {
	return fmt.Sprintf("rate limit of client %q exceeded (%s); retry in %ds", client, v.Rate, max(ceilSeconds(v.Reset), 1))
}

func ceilSeconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

// Window is an in-memory fixed-window rate limiter: each client has a
// quota of Rate.N calls per window, windows aligned to the clock (a 1/m
// window runs from one minute to the next). It counts the calls of one
// process; replicas each count their own.
type Window struct {
	Now func() time.Time
	// ModelTurns makes it count model turns against Client.ModelTurns
	// instead of tool calls against Client.Rate.
	ModelTurns bool
	// OnLimited, when set, is told of every refusal (metrics).
	OnLimited func(client string, calls int)

	mu       sync.Mutex
	counters map[string]*counter
}

type counter struct {
	start time.Time
	used  int
}

// NewWindow returns an empty limiter.
func NewWindow() *Window { return &Window{counters: map[string]*counter{}} }

// Take counts n tool calls of c (at least 1) against its rate limit: all
// n are allowed, or none is and nothing is counted. A client without a
// limit (and the caller of an open service) is always allowed.
func (w *Window) Take(_ context.Context, c *Client, n int) (Verdict, error) {
	rate, kind := limitOf(c, w.ModelTurns)
	if rate.IsZero() {
		return Verdict{Allowed: true}, nil
	}
	n = max(n, 1)
	now := time.Now()
	if w.Now != nil {
		now = w.Now()
	}
	start := now.Truncate(rate.Window)
	v := Verdict{Rate: rate, Reset: start.Add(rate.Window).Sub(now)}
	key := c.Name + "\x00" + rate.String() + kind // a reload that changes the rate starts afresh
	w.mu.Lock()
	defer w.mu.Unlock()
	ct := w.counters[key]
	if ct == nil || !ct.start.Equal(start) {
		if len(w.counters) > 4096 {
			w.sweep(now)
		}
		ct = &counter{start: start}
		w.counters[key] = ct
	}
	if ct.used+n <= rate.N {
		ct.used += n
		v.Allowed = true
	}
	v.Remaining = rate.N - ct.used
	if !v.Allowed && w.OnLimited != nil {
		w.OnLimited(c.Name, n)
	}
	return v, nil
}

// limitOf is the rate a limiter counts for c — its tool calls' (Rate) or
// its model turns' (ModelTurns) — and the suffix of the counter's key
// that keeps the two apart. The caller of an open service has no limit.
func limitOf(c *Client, turns bool) (toolrouter.Rate, string) {
	switch {
	case c == nil:
		return toolrouter.Rate{}, ""
	case turns:
		return c.ModelTurns, "\x1fmodel-turns" // no NUL: PostgreSQL text holds none (Shared)
	}
	return c.Rate, ""
}

// TurnsMessage is the text of a refused model turn.
func (v Verdict) TurnsMessage(client string) string {
	return fmt.Sprintf("model turn limit of client %q exceeded (%s); retry in %ds", client, v.Rate, max(ceilSeconds(v.Reset), 1))
}

// sweep drops counters of windows that ended; w.mu is held.
func (w *Window) sweep(now time.Time) {
	for k, ct := range w.counters {
		if ct.start.Before(now.Add(-time.Hour)) {
			delete(w.counters, k)
		}
	}
}
