package httpapi

import (
	"context"
	"net/http"
	"sync"

	"github.com/go-chi/chi/v5"
	"github.com/rs/zerolog"
)

// reqState is what the middleware of one request keep for it, allocated
// once (by entry, or requestID) and reached through one context value,
// rather than a context value and a request copy for each (issue 10:
// allocations).
//
// It is also the request's context (its parent's, with stateOf's value,
// chi's route context and zerolog's logger), one allocation less per
// request than a context.WithValue of each.
type reqState struct {
	context.Context
	id   [1]string      // the X-Request-Id header's values
	lim  *logLimiter    // limits log lines (limitedLog)
	dw   deadlineWriter // writeDeadline's writer
	sw   statusWriter   // accessLog's writer
	body *checkedBody   // the body the request checker read; nil before
	cb   checkedBody    // storage for body
	// route is a POST /route body the checker read typed (typed true);
	// body then has only its raw bytes.
	route typedRoute
	typed bool
	// rctx is chi's routing context, when entry made the state.
	rctx     chi.Context
	hasRctx  bool
	patterns [2]string // room for rctx.RoutePatterns
	// The request's logger: base with the request id (and client), made
	// on the first zerolog.Ctx that reaches the state.
	base    *zerolog.Logger // nil: the parent context's logger
	client  string          // the authenticated client's name, "" for none
	logOnce sync.Once
	logMade bool
	log     zerolog.Logger
}

type stateKey struct{}

// zerologKey is the context key under which zerolog.Ctx looks its logger
// up (unexported by zerolog; learnt by asking a context that records it).
var zerologKey = func() any {
	var p keyProbe
	zerolog.Ctx(&p)
	return p.key
}()

type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Value(key any) any {
	p.key = key
	return nil
}

// Value is the parent's, with the state itself under stateKey, chi's
// routing context and the request's logger.
func (st *reqState) Value(key any) any {
	switch key {
	case stateKey{}:
		return st
	case chi.RouteCtxKey:
		if st.hasRctx {
			return &st.rctx
		}
	case zerologKey:
		if st.base != nil {
			st.logOnce.Do(func() {
				c := st.base.With().Str("request_id", st.id[0])
				if st.client != "" {
					c = c.Str("client", st.client)
				}
				st.log, st.logMade = c.Logger(), true
			})
			return &st.log
		}
	}
	return st.Context.Value(key)
}

// enabled reports whether the request's logger writes at level.
func (st *reqState) enabled(level zerolog.Level) bool {
	if st.base == nil {
		return true // the parent's logger, whatever its level: ask it
	}
	return level >= st.base.GetLevel() && level >= zerolog.GlobalLevel()
}

// stateOf returns r's state, nil when requestID did not run (tests that
// call a handler alone).
func stateOf(r *http.Request) *reqState {
	st, _ := r.Context().Value(stateKey{}).(*reqState)
	return st
}

// entry is the service's handler: it makes each request's state, which is
// also chi's routing context, then routes with chi (which would otherwise
// add a context value and a request copy of its own). It is also the
// chi.Routes of the API.
type entry struct{ *chi.Mux }

func (e entry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := &reqState{Context: r.Context(), hasRctx: true}
	st.rctx.Routes = e.Mux
	st.rctx.RoutePatterns = st.patterns[:0]
	e.Mux.ServeHTTP(w, r.WithContext(st))
}
