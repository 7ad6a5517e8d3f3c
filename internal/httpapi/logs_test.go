package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/httpapi"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// logLines decodes the JSON log lines written so far.
func logLines(t *testing.T, s *server) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.log.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, l)
		}
		out = append(out, m)
	}
	return out
}

// Issue 14, item 9: at info, successful requests write nothing; failing
// ones are logged with their path clipped, and a flood of one kind is
// rate-limited with a count of what was suppressed.
func TestAccessLogVolume(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	s := newServer(t, func(d *httpapi.Deps) {
		d.Logger = d.Logger.Level(zerolog.InfoLevel)
		d.Now = clock.Now
	})
	for i := 0; i < 50; i++ {
		if w := s.serve("POST", "/route", echoCall); w.Code != 200 {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	if lines := logLines(t, s); len(lines) != 0 {
		t.Fatalf("successful requests logged at info: %v", lines[0])
	}

	long := "/" + strings.Repeat("x", 100_000)
	for i := 0; i < 100; i++ {
		if w := s.serve("GET", long, ""); w.Code != 404 {
			t.Fatalf("%d", w.Code)
		}
	}
	lines := logLines(t, s)
	if len(lines) != 20 {
		t.Fatalf("100 404s in one period wrote %d lines, want 20", len(lines))
	}
	if n := len(s.log.String()); n > 20*1024 {
		t.Fatalf("20 lines of 404s with a 100 KB path took %d bytes", n)
	}
	if p := lines[0]["path"].(string); !strings.HasSuffix(p, "…(100001 bytes)") || len(p) > 300 {
		t.Fatalf("path logged as %q", p)
	}
	if lines[0]["level"] != "info" || lines[0]["status"] != 404.0 {
		t.Fatalf("%v", lines[0])
	}

	clock.Add(11 * time.Second)
	s.serve("GET", long, "")
	lines = logLines(t, s)
	if last := lines[len(lines)-1]; len(lines) != 21 || last["suppressed"] != 80.0 {
		t.Fatalf("after the period: %d lines, last %v; want 21 with suppressed 80", len(lines), last)
	}

	// At debug, successful requests are logged.
	d := newServer(t, func(d *httpapi.Deps) { d.Logger = d.Logger.Level(zerolog.DebugLevel) })
	d.serve("POST", "/route", echoCall)
	if lines := logLines(t, d); len(lines) != 1 || lines[0]["level"] != "debug" || lines[0]["message"] != "request" {
		t.Fatalf("at debug: %v", lines)
	}
}

type downStore struct{}

func (downStore) Ping(context.Context) error {
	return errors.New("dial tcp 127.0.0.1:5432: connection refused")
}

// A store outage is one warning per period per kind, not one per request.
func TestRepeatedWarningsAreRateLimited(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	s := newServer(t, func(d *httpapi.Deps) {
		d.Logger = d.Logger.Level(zerolog.InfoLevel)
		d.Readiness = downStore{}
		d.Now = clock.Now
	})
	for i := 0; i < 500; i++ {
		if w := s.serve("GET", "/readyz", ""); w.Code != 503 {
			t.Fatalf("%d", w.Code)
		}
	}
	if lines := logLines(t, s); len(lines) != 20 || lines[0]["level"] != "warn" {
		t.Fatalf("500 failed readiness checks wrote %d lines, want 20: %v", len(lines), lines[0])
	}
	clock.Add(10 * time.Second)
	s.serve("GET", "/readyz", "")
	lines := logLines(t, s)
	if last := lines[len(lines)-1]; last["suppressed"] != 480.0 {
		t.Fatalf("last line %v, want suppressed 480", last)
	}
}

// authFunc is an Authenticator from a function.
type authFunc func(*http.Request) (*access.Client, error)

func (f authFunc) Authenticate(_ context.Context, r *http.Request) (*access.Client, error) {
	return f(r)
}

// The access log line of a request carries its request id and, once
// authenticated, its client, through zerolog's public API (the request's
// logger in the context), and so do the handlers' lines.
func TestAccessLogCarriesRequestIDAndClient(t *testing.T) {
	s := newServer(t, func(d *httpapi.Deps) {
		d.Auth = authFunc(func(*http.Request) (*access.Client, error) { return &access.Client{Name: "alice"}, nil })
	})
	w := s.serve("POST", "/route", `{"plan_id":"p"}`, "X-Request-Id", "req-42")
	if w.Code != http.StatusBadRequest {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(s.log.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["message"] == "request" {
			found = true
			if m["request_id"] != "req-42" || m["client"] != "alice" || m["status"] != 400.0 {
				t.Errorf("access log line %s: want request_id req-42, client alice, status 400", line)
			}
		}
	}
	if !found {
		t.Fatalf("no access log line in %q", s.log.String())
	}
}
