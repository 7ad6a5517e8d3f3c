package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestRequestIDAllocations: the request id middleware keeps the request's
// logger in its state (issue 37: it had an allocation of its own), and
// the handler still finds its state, its logger (with the request id) and
// the id in the request's context. At most 5 allocations per request (9
// before the logger was in the state, 8 before the state's context answered
// for the id, as a pointer: issue 37).
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
	if n > 5 {
		t.Errorf("requestID allocates %v times per request, want at most 5", n)
	}
}

// TestRequestIDInFrontOfTheRouter: in front of a chi router, requestID's
// context holds the router's routing context (the router makes no context
// and no copy of the request of its own: issue 37 item 2), and routing
// works as it did: patterns, parameters, 404 and 405, each request with
// a routing context of its own.
func TestRequestIDInFrontOfTheRouter(t *testing.T) {
	mux := chi.NewRouter()
	var got []string
	record := true
	mux.Route("/runs", func(r chi.Router) {
		r.Get("/{id}", func(_ http.ResponseWriter, r *http.Request) {
			if !record {
				return
			}
			st := stateOf(r)
			rc := chi.RouteContext(r.Context())
			if st == nil || rc == nil || rc != st.ctx.rctx {
				t.Errorf("routing context %p, want the state's", rc)
				return
			}
			got = append(got, rc.RoutePattern()+" "+chi.URLParam(r, "id")+" "+toolrouter.RequestID(r.Context()))
		})
	})
	h := requestID(zerolog.New(io.Discard), newLogLimiter(nil))(mux)
	if _, ok := h.(chi.Routes); !ok {
		t.Fatal("requestID in front of a router is not its chi.Routes")
	}
	for _, c := range []struct {
		method, path string
		code         int
	}{{"GET", "/runs/a", 200}, {"GET", "/runs/b", 200}, {"POST", "/runs/a", 405}, {"GET", "/nope", 404}} {
		r := httptest.NewRequest(c.method, c.path, nil)
		r.Header.Set("X-Request-Id", "r"+c.path)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.code {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, w.Code, c.code)
		}
	}
	if want := []string{"/runs/{id} a r/runs/a", "/runs/{id} b r/runs/b"}; !slices.Equal(got, want) {
		t.Errorf("routed %q, want %q", got, want)
	}
	if raceOn {
		t.Skip("allocation counts are not exact under the race detector")
	}
	record = false
	r := httptest.NewRequest(http.MethodGet, "/runs/a", nil)
	r.Header.Set("X-Request-Id", "req-1")
	hw := http.Header{}
	allocs := func(h http.Handler) float64 {
		return testing.AllocsPerRun(200, func() {
			clear(hw)
			h.ServeHTTP(headerWriter{hw}, r)
		})
	}
	// The same without the routing context in front: the router makes its
	// own context value and copy of the request (chi pools the rest).
	apart := requestID(zerolog.New(io.Discard), newLogLimiter(nil))(http.HandlerFunc(mux.ServeHTTP))
	if n, before := allocs(h), allocs(apart); n > before-2 {
		t.Errorf("routing a request allocates %v times, %v with the router's own context: want 2 fewer", n, before)
	}
}

// headerWriter is a ResponseWriter that allocates nothing of its own.
type headerWriter struct{ h http.Header }

func (w headerWriter) Header() http.Header       { return w.h }
func (headerWriter) Write(b []byte) (int, error) { return len(b), nil }
func (headerWriter) WriteHeader(int)             {}
