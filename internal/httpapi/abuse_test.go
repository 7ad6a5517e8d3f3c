package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/httpapi"
)

// /mcp's own 503 (too many sessions; plain text from http.Error) reaches the
// client as problem+json with its Retry-After; its successful answers pass
// through untouched (issue 14, item 10).
func TestMCPErrorsAreProblems(t *testing.T) {
	s := newServer(t, func(d *httpapi.Deps) {
		d.MCP = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Mcp-Session-Id") == "" {
				w.Header().Set("Retry-After", "5")
				http.Error(w, "too many MCP sessions open; retry later", http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
		})
	})
	w := s.serve("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`)
	p := problemOf(t, w)
	if w.Code != 503 || p.Detail != "too many MCP sessions open; retry later" || w.Header().Get("Retry-After") != "5" {
		t.Fatalf("%d %+v Retry-After %q", w.Code, p, w.Header().Get("Retry-After"))
	}
	w = s.serve("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "Mcp-Session-Id", "s1")
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" || w.Body.String() != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Fatalf("%d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
}
