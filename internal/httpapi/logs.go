package httpapi

import (
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/lograte"
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

// logLimiter rate-limits log lines by kind (lograte.Limiter).
type logLimiter struct{ *lograte.Limiter }

func newLogLimiter(now func() time.Time) *logLimiter { return &logLimiter{lograte.New(now)} }

func (l *logLimiter) event(log *zerolog.Logger, level zerolog.Level, kind string) *zerolog.Event {
	return l.Event(log, level, kind)
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
