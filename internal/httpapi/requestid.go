package httpapi

import (
	"context"
	"net/http"
	"sync"

	"github.com/go-chi/chi/v5"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/randid"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// requestID takes the request id from X-Request-Id (or makes one), echoes it
// in the response and gives the request's context its state (see reqState),
// the id and a logger carrying it. In front of the API's chi router (routes)
// its context also holds the router's routing context, which the router
// then uses instead of making its own: one copy of the request and one
// context value for all three (issue 37 item 2), where there were two
// copies and four values.
func requestID(base zerolog.Logger, lim *logLimiter) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		f := &front{next: next, base: base, lim: lim}
		if mux, ok := next.(chi.Router); ok {
			f.Router = mux
		}
		return f
	}
}

// front is requestID's handler. It is the chi.Router it serves (for the
// tests and handlers that walk the routes), nil when it serves another
// handler; then it keeps the routing contexts in a pool, as chi does.
type front struct {
	chi.Router
	next    http.Handler
	base    zerolog.Logger
	lim     *logLimiter
	routing sync.Pool // *chi.Context
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-Request-Id")
	if !validRequestID(id) {
		id = randid.Hex(12)
	}
	st := &reqState{lim: f.lim, logger: f.base.With().Str("request_id", id).Logger()}
	st.log = &st.logger // the logger lives in the state: no allocation of its own
	st.id[0] = id
	w.Header()["X-Request-Id"] = st.id[:] // as Header.Set, without a slice of its own
	st.ctx = reqContext{Context: r.Context(), st: st}
	if f.Router == nil || chi.RouteContext(r.Context()) != nil {
		f.next.ServeHTTP(w, r.WithContext(st.logger.WithContext(&st.ctx)))
		return
	}
	// What chi's Mux.ServeHTTP does, in this context value.
	rctx, _ := f.routing.Get().(*chi.Context)
	if rctx == nil {
		rctx = chi.NewRouteContext()
	}
	rctx.Reset()
	rctx.Routes = f.Router
	st.ctx.rctx = rctx
	f.next.ServeHTTP(w, r.WithContext(st.logger.WithContext(&st.ctx)))
	f.routing.Put(rctx)
}

// reqContext is a request's context as requestID makes it, kept in its
// state: it answers for the state, the request id and (routing) chi's
// routing context, and asks its parent for the rest.
type reqContext struct {
	context.Context
	st   *reqState
	rctx *chi.Context
}

func (c *reqContext) Value(key any) any {
	switch key {
	case stateKey{}:
		return c.st
	case chi.RouteCtxKey:
		if c.rctx != nil {
			return c.rctx
		}
	default:
		if toolrouter.IsRequestIDKey(key) {
			return &c.st.id[0] // a pointer: no allocation
		}
	}
	return c.Context.Value(key)
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}
