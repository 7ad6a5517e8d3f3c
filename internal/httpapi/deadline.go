package httpapi

import (
	"net/http"
	"time"
)

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
