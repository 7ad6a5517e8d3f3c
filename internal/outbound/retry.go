package outbound

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Backoff is jittered exponential backoff: retry n (from 1) waits
// Base·2^(n-1), at most Max, spread uniformly over ±Jitter of itself, and
// never more than Max.
type Backoff struct {
	Base, Max time.Duration
	Jitter    float64 // 0 ≤ Jitter ≤ 1
}

// Delay is the wait before retry n.
func (b Backoff) Delay(n int) time.Duration {
	d := min(b.Base<<min(max(n-1, 0), 20), b.Max)
	if j := time.Duration(float64(d) * b.Jitter); j > 0 {
		d += rand.N(2*j) - j
	}
	return min(d, b.Max)
}

// ErrPastDeadline is Sleep's answer when the wait would end after the
// context's deadline.
var ErrPastDeadline = errors.New("the wait would outlast the deadline")

// Sleep waits d between two attempts. It returns ErrPastDeadline at once
// when ctx's deadline comes no later than the wait's end (the caller
// reports the failure it has rather than a timeout), and ctx.Err() when
// ctx ends during the wait.
func Sleep(ctx context.Context, d time.Duration) error {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return ErrPastDeadline
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// RetryAfter is the wait an answer asks for: its retry-after-ms (OpenAI),
// else its Retry-After (delay seconds or an HTTP date), at most limit; -1
// when it asks for none (or nothing readable).
func RetryAfter(h http.Header, now time.Time, limit time.Duration) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return min(time.Duration(ms*float64(time.Millisecond)), limit)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return -1
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 {
			return -1
		}
		if secs >= limit.Seconds() {
			return limit
		}
		return time.Duration(secs * float64(time.Second))
	}
	if at, err := http.ParseTime(v); err == nil {
		return min(max(at.Sub(now), 0), limit)
	}
	return -1
}
