package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestRequestIDAllocations: the request id middleware keeps the request's
// logger in its state (issue 37: it had an allocation of its own), and
// the handler still finds its state, its logger (with the request id) and
// the id in the request's context. At most 8 allocations per request (9
// before: the logger was allocated apart from the state).
func TestRequestIDAllocations(t *testing.T) {
	var buf bytes.Buffer
	var seen *reqState
	var id string
	h := requestID(zerolog.New(&buf), newLogLimiter(nil))(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		seen, id = stateOf(r), toolrouter.RequestID(r.Context())
		zerolog.Ctx(r.Context()).Info().Msg("hello")
	}))
	r := httptest.NewRequest(http.MethodPost, "/route", nil)
	r.Header.Set("X-Request-Id", "req-1")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if seen == nil || seen.log != &seen.logger || id != "req-1" || w.Header().Get("X-Request-Id") != "req-1" || buf.String() != `{"level":"info","request_id":"req-1","message":"hello"}`+"\n" {
		t.Fatalf("state %v, id %q, header %q, log %q", seen, id, w.Header().Get("X-Request-Id"), buf.String())
	}
	if raceOn {
		t.Skip("allocation counts are not exact under the race detector")
	}
	quiet := requestID(zerolog.New(io.Discard), newLogLimiter(nil))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	hw := http.Header{}
	n := testing.AllocsPerRun(200, func() {
		clear(hw)
		quiet.ServeHTTP(headerWriter{hw}, r)
	})
	if n > 8 {
		t.Errorf("requestID allocates %v times per request, want at most 8", n)
	}
}

// headerWriter is a ResponseWriter that allocates nothing of its own.
type headerWriter struct{ h http.Header }

func (w headerWriter) Header() http.Header       { return w.h }
func (headerWriter) Write(b []byte) (int, error) { return len(b), nil }
func (headerWriter) WriteHeader(int)             {}
