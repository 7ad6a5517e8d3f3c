package mcpserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/mcpserver"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// countingLimiter is access.Window on a fixed clock, counting what it was
// asked to take.
type countingLimiter struct {
	w     *access.Window
	taken atomic.Int64
}

func (l *countingLimiter) Take(ctx context.Context, c *access.Client, calls toolrouter.Calls) (access.Verdict, error) {
	v, err := l.w.Take(ctx, c, calls.N)
	if err == nil && v.Allowed {
		l.taken.Add(int64(calls.N))
	}
	return v, err
}

// TestMCPServerRateLimitDecodesLikeTheSDK: a tools/call hidden from a
// case-insensitive decoder by a duplicate "Method" key, alone or in a
// batch (protocol 2025-03-26), is counted against the client's rate limit
// as the SDK runs it: over the limit it is HTTP 429 with the JSON-RPC
// rate-limit error, and calls within it are counted once.
func TestMCPServerRateLimitDecodesLikeTheSDK(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 30, 0, 0, time.UTC)
	lim := &countingLimiter{w: access.NewWindow()}
	lim.w.Now = func() time.Time { return now }
	e := newEnv(t, func(d *mcpserver.Deps) { d.Limiter = lim })
	client := access.NewClients(nil, []registry.Client{{Name: "billing", Tools: []string{"*"}, RateLimit: registry.Rate{N: 2, Window: time.Hour}}}).ByName("billing")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.h.ServeHTTP(w, r.WithContext(access.NewContext(r.Context(), client)))
	}))
	t.Cleanup(srv.Close)
	sid := ""
	post := func(body string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer k")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	status, h, body := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if sid = h.Get("Mcp-Session-Id"); status != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	if status, _, body := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", status, body)
	}
	echo := `"params":{"name":"` + mcpName("test/echo") + `","arguments":{"msg":"hi"}}`
	// Two calls within the limit of 2, each counted once.
	for i := range 2 {
		if status, _, body := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call",` + echo + `}`); status != 200 || !strings.Contains(body, `"hi"`) {
			t.Fatalf("call %d within the limit: %d %s", i, status, body)
		}
	}
	if n := lim.taken.Load(); n != 2 {
		t.Errorf("two calls took %d from the limit, want 2", n)
	}
	for name, body := range map[string]string{
		"duplicate key": `{"jsonrpc":"2.0","id":3,"method":"tools/call","Method":"ping",` + echo + `}`,
		"batch":         `[{"jsonrpc":"2.0","id":4,"method":"tools/call","Method":"ping",` + echo + `},{"jsonrpc":"2.0","id":5,"method":"ping"}]`,
	} {
		status, h, got := post(body)
		if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" || h.Get("RateLimit") == "" ||
			!strings.Contains(got, `"code":-32023`) || !strings.Contains(got, `"retryAfterMs":`) || !strings.Contains(got, `rate limit of client \"billing\" exceeded`) {
			t.Errorf("%s over the limit: %d %v %s", name, status, h, got)
		}
	}
}
