package httpapi

import (
	"net/http"

	"github.com/rs/zerolog"
)

// reqState is what the middleware of one request keep for it, made once by
// requestID and reached through one context value (stateOf).
type reqState struct {
	id  [1]string   // the X-Request-Id header's values
	ctx reqContext  // the request's context (requestID)
	lim *logLimiter // limits log lines (limitedLog)
	// log is the request's latest logger (request id, trace ids, then
	// client), for the access log, which runs outside the contexts of the
	// handlers that add to it.
	log *zerolog.Logger
	// logger is the logger requestID makes (with the request id), kept
	// here so that it costs no allocation of its own.
	logger zerolog.Logger
	dw     deadlineWriter // writeDeadline's writer
	sw     statusWriter   // accessLog's writer
	// raw is the body the request checker read; nil before.
	raw []byte
	// route and batch are the bodies of POST /route and /route/batch as
	// the request checker decoded and checked them.
	route routeRequest
	batch batchRequest
}

type stateKey struct{}

// stateOf returns r's state, nil when requestID did not run (tests that
// call a handler alone).
func stateOf(r *http.Request) *reqState {
	st, _ := r.Context().Value(stateKey{}).(*reqState)
	return st
}
