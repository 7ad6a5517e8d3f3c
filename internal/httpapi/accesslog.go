package httpapi

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/rs/zerolog"
)

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
				// The logger here (request id, trace ids); authenticate
				// replaces it with its child that names the client.
				st.log = zerolog.Ctx(r.Context())
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
				log := zerolog.Ctx(r.Context())
				if st != nil {
					log = st.log // with the client, once authenticated
				}
				var e *zerolog.Event
				switch {
				case status >= 500 && status != statusClientClosed:
					e = lim.event(log, zerolog.WarnLevel, "access "+route+" "+strconv.Itoa(status))
				case status >= 400:
					e = lim.event(log, zerolog.InfoLevel, "access "+route+" "+strconv.Itoa(status))
				case d >= slowRequest:
					e = lim.event(log, zerolog.InfoLevel, "slow "+route)
				default:
					e = log.Debug()
				}
				if e == nil { // the level is off: nothing to gather
					return
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
