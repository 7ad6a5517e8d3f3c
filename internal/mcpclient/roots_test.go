package mcpclient_test

//lint:file-ignore SA1019 roots, sampling and logging are deprecated by MCP 2026-07-28 (SEP-2577) and still served to servers of the older revisions

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestMCPRootsOnlyWhenConfigured: toolrouterd advertises the roots
// capability, and lists roots, only to a server whose registry entry has
// roots.
func TestMCPRootsOnlyWhenConfigured(t *testing.T) {
	f := newFakeServer(t, nil, func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "roots", InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				out := map[string]any{"capability": req.Session.InitializeParams().Capabilities.RootsV2 != nil}
				if out["capability"] == true {
					res, err := req.Session.ListRoots(ctx, nil)
					if err != nil {
						return nil, err
					}
					var uris []string
					for _, r := range res.Roots {
						uris = append(uris, r.URI)
					}
					out["roots"] = uris
				}
				b, _ := json.Marshal(out)
				return &mcp.CallToolResult{Content: text(string(b))}, nil
			})
	}, false)
	for _, tc := range []struct {
		roots []string
		want  string
	}{
		{nil, `{"capability":false}`},
		{[]string{"file:///data", "file:///srv"}, `{"capability":true,"roots":["file:///data","file:///srv"]}`},
	} {
		fx := newManager(t)
		cfg := serverConfig("s", f.URL())
		cfg.Roots = tc.roots
		fx.m.Sync(context.Background(), []toolrouter.MCPServer{cfg})
		out := call(fx.m, find(t, fx.m, "s/roots"), nil)
		if string(out.Output) != tc.want {
			t.Errorf("roots %v: %s (%s), want %s", tc.roots, out.Output, out.Err, tc.want)
		}
	}
}
