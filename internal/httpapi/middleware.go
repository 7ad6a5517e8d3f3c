package httpapi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/randid"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// requestID takes the request id from X-Request-Id (or makes one), echoes it
// in the response and gives the request's context a logger carrying it
// (made when first asked for: most requests log nothing) and the request's
// state (limiter of log lines, see reqState).
func requestID(base zerolog.Logger, lim *logLimiter) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := r.Header.Get("X-Request-Id")
			if !validRequestID(id) {
				id = randid.Hex(12)
			}
			st := stateOf(r) // made by entry, ahead of chi
			fresh := st == nil
			if fresh {
				st = &reqState{Context: r.Context()}
			}
			st.lim, st.base = lim, &base
			st.id[0] = id
			w.Header()["X-Request-Id"] = st.id[:] // as Header.Set, without a slice of its own
			if fresh {
				r = r.WithContext(st)
			}
			next.ServeHTTP(w, r)
		})
	}
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

// accessLog logs one line per request and records its metrics under the
// matched route pattern. Successful, fast requests are logged at debug;
// 4xx and slow ones at info, 5xx at warn, each kind (route and status)
// rate-limited by lim, and the path clipped (issue 14, item 9).
func accessLog(m Metrics, lim *logLimiter) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			st := stateOf(r)
			var ww *statusWriter
			if st != nil {
				ww = &st.sw // one allocation less per request
			} else {
				ww = new(statusWriter)
			}
			*ww = statusWriter{ResponseWriter: w}
			m.InFlight(1)
			defer func() {
				m.InFlight(-1)
				d := time.Since(start)
				route := "unmatched"
				if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
					route = rc.RoutePattern()
				}
				status := ww.Status()
				if status == 0 {
					status = http.StatusOK
				}
				m.HTTPRequest(route, methodLabel(r.Method), status, d)
				if route == "/healthz" || route == "/readyz" || route == "/metrics" {
					return
				}
				var e *zerolog.Event
				switch {
				case status >= 500 && status != statusClientClosed:
					e = lim.event(zerolog.Ctx(r.Context()), zerolog.WarnLevel, "access "+route+" "+strconv.Itoa(status))
				case status >= 400:
					e = lim.event(zerolog.Ctx(r.Context()), zerolog.InfoLevel, "access "+route+" "+strconv.Itoa(status))
				case d >= slowRequest:
					e = lim.event(zerolog.Ctx(r.Context()), zerolog.InfoLevel, "slow "+route)
				default:
					if st != nil && !st.enabled(zerolog.DebugLevel) {
						return // spare making the request's logger
					}
					e = zerolog.Ctx(r.Context()).Debug()
				}
				e.Str("method", methodLabel(r.Method)).Str("path", clip(r.URL.Path)).Str("route", route).
					Int("status", status).Int("bytes", ww.BytesWritten()).
					Float64("duration_ms", float64(d.Microseconds())/1000).
					Str("remote", r.RemoteAddr).Msg("request")
			}()
			next.ServeHTTP(ww, r)
		})
	}
}

// methodLabel bounds the method label of the metrics: any token is a
// valid method, and one time series per made-up method would grow
// without end.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// recoverer turns a panic into a logged 500 problem instead of a dropped
// connection.
func recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				zerolog.Ctx(r.Context()).Error().Interface("panic", v).Bytes("stack", debug.Stack()).Msg("handler panicked")
				writeProblem(w, r, http.StatusInternalServerError, "", "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// authenticate resolves the request's credentials to a client (README
// "Clients") and puts it in the request context, where every lookup of a
// tool finds it; nil auth means an open service. Missing or refused
// credentials are 401 problem+json; with JWT on (issuer set) the
// challenge points at the RFC 9728 metadata, as the MCP authorization
// spec asks (api/openapi.yaml, response Unauthorized).
func authenticate(auth Authenticator, issuer string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if auth == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := auth.Authenticate(r.Context(), r)
			if err != nil {
				if !access.IsDenied(err) { // the issuer's keys cannot be fetched
					zerolog.Ctx(r.Context()).Error().Err(err).Msg("cannot verify bearer token")
					w.Header().Set("Retry-After", "5")
					writeProblem(w, r, http.StatusServiceUnavailable, "Authorization", "Authorization: the token cannot be verified now (the issuer's keys are unreachable); retry later")
					return
				}
				challenge := `Bearer realm="toolrouterd"`
				if issuer != "" {
					challenge = fmt.Sprintf("Bearer resource_metadata=%q", resourceURL(r, wellKnownPath(r.URL.Path)))
				}
				if !errors.Is(err, access.ErrNoCredentials) {
					challenge += `, error="invalid_token"` // RFC 6750 §3.1
				}
				w.Header().Set("WWW-Authenticate", challenge)
				writeProblem(w, r, http.StatusUnauthorized, "Authorization", "Authorization: "+err.Error())
				return
			}
			ctx := r.Context()
			if c != nil {
				ctx = access.NewContext(ctx, c)
				if st := stateOf(r); st != nil && st.base != nil && !st.logMade {
					st.client = c.Name // in the request's logger when it is made
				} else {
					l := zerolog.Ctx(ctx).With().Str("client", c.Name).Logger()
					ctx = l.WithContext(ctx)
				}
			}
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// wellKnownPath is the RFC 9728 metadata path of the resource at path:
// /mcp has its own, everything else the service's.
func wellKnownPath(path string) string {
	if path == "/mcp" || strings.HasPrefix(path, "/mcp/") {
		return "/.well-known/oauth-protected-resource/mcp"
	}
	return "/.well-known/oauth-protected-resource"
}

// rejectEmptySegments answers 404 for a path with an empty segment
// (//route, /runs//): chi would route /runs// to /runs/{id} with the id
// "/", while no operation of the spec has such a path.
func rejectEmptySegments(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := routingPath(r); strings.Contains(p, "//") {
			clean := "/" + strings.Join(strings.FieldsFunc(r.URL.Path, func(c rune) bool { return c == '/' }), "/")
			writeProblem(w, r, http.StatusNotFound, "", "no route for "+r.Method+" "+r.URL.Path+" (empty path segment; did you mean "+clean+"?)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// resourceURL is the absolute URL of path on this service as the caller
// reached it (the gateway's X-Forwarded-Proto names the scheme).
func resourceURL(r *http.Request, path string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	return scheme + "://" + r.Host + path
}

// entryPoint names the entry point of the tool calls of a route for
// their audit records (README "Audit trail").
func entryPoint(e string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if toolrouter.EntryPoint(r.Context()) == e {
				// Already so (EntryRoute is the default): spare POST
				// /route a context and a request copy (issue 10).
				next.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r.WithContext(toolrouter.WithEntryPoint(r.Context(), e)))
		})
	}
}

// rateLimit counts the tool calls of a request (calls reads how many)
// against the rate limit of its client; over it the answer is 429 with
// Retry-After and the RateLimit-Policy / RateLimit fields, and no tool is
// called (api/openapi.yaml, response TooManyRequests).
func rateLimit(l Limiter, calls func(*http.Request) int) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if l == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c := access.FromContext(r.Context())
			v, err := l.Take(r.Context(), c, calls(r))
			if err != nil {
				writeError(w, r, toolrouter.Unavailable("rate limiter", err))
				return
			}
			v.SetHeaders(w.Header())
			if !v.Allowed {
				writeProblem(w, r, http.StatusTooManyRequests, "", v.Message(c.LabelName()))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// problemErrors turns the plain-text error answers of a handler that is not
// ours (the MCP SDK's, http.Error's) into problem+json, like every other
// error of the API; everything else passes through untouched.
func problemErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pw := &problemWriter{ResponseWriter: w}
		next.ServeHTTP(pw, r)
		if pw.status != 0 {
			h := w.Header()
			h.Del("X-Content-Type-Options")
			writeProblem(w, r, pw.status, "", strings.TrimSpace(string(pw.text)))
		}
	})
}

// problemWriter holds back a plain-text error answer (status >= 400) for
// problemErrors.
type problemWriter struct {
	http.ResponseWriter
	status  int    // the held-back status; 0 when nothing is held back
	text    []byte // its text, bounded
	started bool
}

func (w *problemWriter) WriteHeader(code int) {
	if !w.started && code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.started, w.status = true, code
		return
	}
	w.started = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *problemWriter) Write(b []byte) (int, error) {
	if w.status != 0 {
		w.text = append(w.text, b[:min(len(b), max(0, 1024-len(w.text)))]...)
		return len(b), nil
	}
	w.started = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and deadlines (SSE).
func (w *problemWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writeDeadline gives every response a write deadline of timeout from its
// first byte (issue 14, item 4): a client that stops reading a large answer
// is cut off instead of holding it forever, however long the handler ran
// before answering. Streams (SSE) set deadlines of their own per event,
// which replace this one; /mcp is left to the MCP SDK's streams.
func writeDeadline(timeout time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/mcp" {
				next.ServeHTTP(w, r)
				return
			}
			// A deadline left by the previous response on this connection
			// must not cut this one.
			setWriteDeadline(w, time.Time{})
			var dw *deadlineWriter
			if st := stateOf(r); st != nil {
				dw = &st.dw // one allocation less per request
			} else {
				dw = new(deadlineWriter)
			}
			*dw = deadlineWriter{ResponseWriter: w, timeout: timeout}
			next.ServeHTTP(dw, r)
		})
	}
}

// batchCalls is the number of tool calls of a POST /route/batch body: its
// tool_calls, or the calls of its message (a turn that does not split is
// refused by the handler, so it counts none).
func batchCalls(r *http.Request) int {
	b := body(r)
	if msg, ok := b["message"]; ok {
		if turn, err := format.SplitTurn(msg); err == nil {
			return len(turn.Calls)
		}
		return 0
	}
	calls, _ := b["tool_calls"].([]any)
	return len(calls)
}

func oneCall(*http.Request) int { return 1 }

// deadlineWriter sets the write deadline at the first byte of the response.
type deadlineWriter struct {
	http.ResponseWriter
	timeout time.Duration
	started bool
}

func (w *deadlineWriter) start() {
	if !w.started {
		w.started = true
		setWriteDeadline(w.ResponseWriter, time.Now().Add(w.timeout))
	}
}

func (w *deadlineWriter) WriteHeader(code int) {
	if code >= 200 { // 1xx are not the response
		w.start()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.start()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and deadlines (SSE).
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// setReadDeadline and setWriteDeadline do what http.ResponseController's
// methods do (unwrapping w until a writer has the method), without
// allocating the controller on every request; a writer without deadlines
// (a test recorder) is left alone, as the controller's error was ignored.
func setReadDeadline(w http.ResponseWriter, t time.Time) {
	for {
		switch x := w.(type) {
		case interface{ SetReadDeadline(time.Time) error }:
			_ = x.SetReadDeadline(t)
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return
		}
	}
}

func setWriteDeadline(w http.ResponseWriter, t time.Time) {
	for {
		switch x := w.(type) {
		case interface{ SetWriteDeadline(time.Time) error }:
			_ = x.SetWriteDeadline(t)
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return
		}
	}
}

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

// statusWriter records the status and size of a response for accessLog,
// as chi's middleware.WrapResponseWriter did: 1xx other than 101 pass
// through unrecorded, a second WriteHeader is dropped.
type statusWriter struct {
	http.ResponseWriter
	code        int
	bytes       int
	wroteHeader bool
}

// Status is the response's status, 0 before one was written.
func (w *statusWriter) Status() int { return w.code }

// BytesWritten is the size of the body written so far.
func (w *statusWriter) BytesWritten() int { return w.bytes }

func (w *statusWriter) WriteHeader(code int) {
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	if !w.wroteHeader {
		w.code, w.wroteHeader = code, true
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

// ReadFrom keeps net/http's sendfile path for file responses.
func (w *statusWriter) ReadFrom(src io.Reader) (int64, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(writerOnly{w.ResponseWriter}, src)
	}
	w.bytes += int(n)
	return n, err
}

// writerOnly hides everything of a writer but Write (from io.Copy).
type writerOnly struct{ io.Writer }

// Flush flushes the response (SSE, the MCP SDK's streams); a writer that
// cannot is left alone.
func (w *statusWriter) Flush() {
	w.wroteHeader = true
	if w.code == 0 {
		w.code = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hands the connection over (http.ErrNotSupported when the writer
// cannot).
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach deadlines.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
