package httpapi

import (
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"
)

// Log volume bounds (issue 14, item 9): a client controls paths and error
// texts, and a flood of failing requests must not become a flood of lines.
const (
	// maxLoggedField bounds a logged string taken from a request or an
	// error (paths, error texts).
	maxLoggedField = 256
	// slowRequest is the duration from which a successful request is logged
	// at info rather than debug.
	slowRequest = time.Second
	// logBurst lines of one kind (say, 404s of one route, or "dependency
	// unavailable") are written per logPeriod; the rest are counted and the
	// count is added to the next line of that kind as "suppressed".
	logBurst  = 20
	logPeriod = 10 * time.Second
	// maxLogKinds bounds the limiter's memory; kinds are few (route
	// patterns × statuses), so reaching it only forgets old counts.
	maxLogKinds = 4096
)

// clip cuts s to maxLoggedField bytes on a rune boundary, saying how long
// it was.
func clip(s string) string {
	if len(s) <= maxLoggedField {
		return s
	}
	n := maxLoggedField
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// logLimiter rate-limits log lines by kind.
type logLimiter struct {
	now   func() time.Time
	mu    sync.Mutex
	kinds map[string]*logKind
}

type logKind struct {
	start      time.Time // of the current period
	n          int       // lines written in it
	suppressed int       // lines dropped since the last one written
}

func newLogLimiter(now func() time.Time) *logLimiter {
	if now == nil {
		now = time.Now
	}
	return &logLimiter{now: now, kinds: map[string]*logKind{}}
}

// allow reports whether a line of kind may be written, and how many lines
// of that kind were suppressed before it (to be logged with it).
func (l *logLimiter) allow(kind string) (ok bool, suppressed int) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.kinds[kind]
	if k == nil {
		if len(l.kinds) >= maxLogKinds {
			clear(l.kinds)
		}
		k = &logKind{start: now}
		l.kinds[kind] = k
	}
	if now.Sub(k.start) >= logPeriod {
		k.start, k.n = now, 0
	}
	if k.n >= logBurst {
		k.suppressed++
		return false, 0
	}
	k.n++
	suppressed, k.suppressed = k.suppressed, 0
	return true, suppressed
}

// event starts a log event of kind at level on log, or returns nil (on
// which zerolog's methods do nothing) when the kind is over its rate.
func (l *logLimiter) event(log *zerolog.Logger, level zerolog.Level, kind string) *zerolog.Event {
	e := log.WithLevel(level)
	if e == nil { // level disabled: do not count it
		return nil
	}
	ok, suppressed := l.allow(kind)
	if !ok {
		e.Discard()
		return nil
	}
	if suppressed > 0 {
		e = e.Int("suppressed", suppressed)
	}
	return e
}

// limitedLog starts a rate-limited log event of kind for the request (see
// logLimiter); without a limiter in the context it is not limited.
func limitedLog(r *http.Request, level zerolog.Level, kind string) *zerolog.Event {
	log := zerolog.Ctx(r.Context())
	if st := stateOf(r); st != nil && st.lim != nil {
		return st.lim.event(log, level, kind)
	}
	return log.WithLevel(level)
}
