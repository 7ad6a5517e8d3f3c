package httpapi

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/rs/zerolog"
)

// requestID takes the request id from X-Request-Id (or makes one), echoes it
// in the response and attaches a logger carrying it to the context.
func requestID(base zerolog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := r.Header.Get("X-Request-Id")
			if !validRequestID(id) {
				var b [12]byte
				_, _ = rand.Read(b[:])
				id = hex.EncodeToString(b[:])
			}
			w.Header().Set("X-Request-Id", id)
			l := base.With().Str("request_id", id).Logger()
			next.ServeHTTP(w, r.WithContext(l.WithContext(r.Context())))
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
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			m.InFlight(1)
			r = r.WithContext(withLimiter(r.Context(), lim))
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

// auth requires "Authorization: Bearer KEY" with one of keys; no keys means
// no authentication.
func auth(keys []string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if len(keys) == 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := r.Header.Get("Authorization")
			// The scheme is case-insensitive (RFC 9110 §11.1).
			scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
			if ok && strings.EqualFold(scheme, "Bearer") && keyAccepted(keys, strings.TrimSpace(token)) {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolrouterd"`)
			detail := "Authorization: a valid bearer key is required"
			if h == "" {
				detail = "Authorization: header missing; send Authorization: Bearer KEY"
			}
			writeProblem(w, r, http.StatusUnauthorized, "Authorization", detail)
		})
	}
}

func keyAccepted(keys []string, token string) bool {
	ok := 0
	for _, k := range keys {
		ok |= subtle.ConstantTimeCompare([]byte(k), []byte(token))
	}
	return ok == 1
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
			rc := http.NewResponseController(w)
			// A deadline left by the previous response on this connection
			// must not cut this one.
			_ = rc.SetWriteDeadline(time.Time{})
			next.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: rc, timeout: timeout}, r)
		})
	}
}

// deadlineWriter sets the write deadline at the first byte of the response.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	started bool
}

func (w *deadlineWriter) start() {
	if !w.started {
		w.started = true
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
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
