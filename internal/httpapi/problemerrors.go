package httpapi

import (
	"net/http"
	"strings"
)

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
