// Package lograte rate-limits repeated log lines by kind, so that a flood of
// failures (a store outage, a client sending bad requests) becomes a few
// lines with a count of what was suppressed (issue 14 item 9).
package lograte

import (
	"sync"
	"time"

	"github.com/rs/zerolog"
)

const (
	// Burst lines of one kind are written per Period; the rest are counted
	// and the count is added to the next line of that kind as
	// "suppressed".
	Burst  = 20
	Period = 10 * time.Second
	// maxKinds bounds the limiter's memory; kinds are few (route patterns
	// × statuses, store operations), so reaching it only forgets old counts.
	maxKinds = 4096
)

// Limiter rate-limits log lines by kind. A nil *Limiter limits nothing.
type Limiter struct {
	now   func() time.Time
	mu    sync.Mutex
	kinds map[string]*kind
}

type kind struct {
	start      time.Time // of the current period
	n          int       // lines written in it
	suppressed int       // lines dropped since the last one written
}

// New returns a Limiter reading the time from now (time.Now when nil).
func New(now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{now: now, kinds: map[string]*kind{}}
}

// Allow reports whether a line of kind may be written, and how many lines
// of that kind were suppressed before it (to be logged with it).
func (l *Limiter) Allow(name string) (ok bool, suppressed int) {
	if l == nil {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.kinds[name]
	if k == nil {
		if len(l.kinds) >= maxKinds {
			clear(l.kinds)
		}
		k = &kind{start: now}
		l.kinds[name] = k
	}
	if now.Sub(k.start) >= Period {
		k.start, k.n = now, 0
	}
	if k.n >= Burst {
		k.suppressed++
		return false, 0
	}
	k.n++
	suppressed, k.suppressed = k.suppressed, 0
	return true, suppressed
}

// Event starts a log event of kind at level on log, with "suppressed" when
// earlier lines of kind were dropped, or returns nil (on which zerolog's
// methods do nothing) when the kind is over its rate. A level log does not
// write is not counted.
func (l *Limiter) Event(log *zerolog.Logger, level zerolog.Level, kind string) *zerolog.Event {
	e := log.WithLevel(level)
	if e == nil {
		return nil
	}
	ok, suppressed := l.Allow(kind)
	if !ok {
		e.Discard()
		return nil
	}
	if suppressed > 0 {
		e = e.Int("suppressed", suppressed)
	}
	return e
}
