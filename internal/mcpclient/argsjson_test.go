package mcpclient_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/mcpclient"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestCallSendsArgsJSON: arguments the router encoded (ArgsJSON) reach
// the server as the same bytes as Args alone would, on the hot path
// (encoding/json's bytes) and on the SDK's (its encoder does not escape
// HTML, hence the "<x>"), and nil Args still arrive as {}.
func TestCallSendsArgsJSON(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: objectSchema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text(string(req.Params.Arguments))}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer hs.Close()
	argsMap := map[string]any{"msg": "hi", "b": map[string]any{"z": 1.5, "a": []any{"<x>"}}, "a": nil}
	want, _ := json.Marshal(argsMap)
	for _, path := range []string{"sdk", "hotpath"} {
		m := mcpclient.New(zerolog.Nop(), nil)
		if path == "sdk" {
			mcpclient.SetSDKCalls(m, true)
		}
		m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", hs.URL)})
		tool := find(t, m, "s/echo")
		// The server echoes the arguments it got, as the output.
		call := func(req toolrouter.ExecRequest) string {
			out := m.Call(context.Background(), req)
			if !out.Success() {
				t.Fatalf("%s: %s %s", path, out.Category, out.Err)
			}
			return string(out.Output)
		}
		byArgs := call(toolrouter.ExecRequest{Tool: tool, Args: argsMap})
		if got := call(toolrouter.ExecRequest{Tool: tool, Args: argsMap, ArgsJSON: want}); got != byArgs {
			t.Errorf("%s: the server got %s with ArgsJSON, %s without", path, got, byArgs)
		}
		if path == "hotpath" && byArgs != string(want) {
			t.Errorf("hotpath: the server got %s, want %s", byArgs, want)
		}
		if got := call(toolrouter.ExecRequest{Tool: tool}); got != `{}` {
			t.Errorf("%s: no arguments: the server got %s, want {}", path, got)
		}
		m.Close()
	}
}
