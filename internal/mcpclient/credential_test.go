package mcpclient_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/mcpclient"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestCallCredential (docs/backend-auth.md): a call's credential replaces
// the server's header of the same name on that call's tools/call only,
// on the hot path and through the SDK; the session's other requests and
// calls without one keep the registry's header.
func TestCallCredential(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "who", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "who", InputSchema: objectSchema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text(req.GetExtra().Header.Get("Authorization"))}, nil
		})
	var mu sync.Mutex
	other := map[string]bool{} // Authorization of requests other than tools/call
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		other[r.Header.Get("Authorization")] = true
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	for _, path := range []string{"sdk", "hotpath"} {
		m := mcpclient.New(zerolog.Nop(), nil)
		if path == "sdk" {
			mcpclient.SetSDKCalls(m, true)
		}
		cfg := serverConfig("s", hs.URL)
		cfg.Headers = map[string]string{"Authorization": "Bearer static"}
		m.Sync(context.Background(), []toolrouter.MCPServer{cfg})
		tool := find(t, m, "s/who")
		cred := &toolrouter.Credential{Header: "Authorization", Value: toolrouter.NewSecret("Bearer alice-token")}
		for i, tc := range []struct {
			cred *toolrouter.Credential
			want string
		}{{cred, "Bearer alice-token"}, {nil, "Bearer static"}, {cred, "Bearer alice-token"}} {
			out := m.Call(context.Background(), toolrouter.ExecRequest{Tool: tool, Credential: tc.cred})
			if got := mcpText(t, out); got != tc.want {
				t.Errorf("%s call %d: the server got %q, want %q", path, i, got, tc.want)
			}
		}
		m.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if !other["Bearer static"] {
		t.Errorf("the session's requests carried %v, want the registry's header", other)
	}
}

// mcpText is the text an MCP call answered (its output, a JSON string).
func mcpText(t *testing.T, out toolrouter.Outcome) string {
	t.Helper()
	if !out.Success() {
		t.Fatalf("call failed: %s %s", out.Category, out.Err)
	}
	var s string
	if err := json.Unmarshal(out.Output, &s); err != nil {
		t.Fatalf("output %s is not a JSON string", out.Output)
	}
	return s
}
