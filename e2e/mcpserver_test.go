package e2e_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/mcpserver"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// mcpConnect opens an MCP session on toolrouterd's /mcp with the go-sdk
// client; hc may be nil.
// mcpConnect opens a session (protocol 2025-11-25: the SDK's default,
// 2026-07-28, has none; TestMCPPassThrough and TestMCPConformance cover it).
func mcpConnect(t *testing.T, url string, hc *http.Client, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, opts)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: hc, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func mcpTools(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		out[tool.Name] = tool
	}
	return out
}

func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

func mcpText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestMCPServerE2E: the real binary serves the example registry over MCP:
// every tool listed under its MCP name, calls routed with the session's
// plan, failures as isError results, a SIGHUP reload announced with
// list_changed, and a shutdown not held up by open sessions.
func TestMCPServerE2E(t *testing.T) {
	tools := startTools(t)
	reg := exampleRegistry(t, tools.addr)
	rt, path := startRouter(t, reg)
	changed := make(chan struct{}, 10)
	cs, err := mcpConnect(t, rt.URL(), nil, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}

	listed := mcpTools(t, cs)
	for _, name := range []string{"test/echo", "math/add", "test/validator", "test/validator-fail", "test/fail", "test/slow", "test/context"} {
		mt := listed[toolrouter.ExportName(toolrouter.FormatMCP, name)]
		if mt == nil {
			t.Errorf("%s not listed under %q", name, toolrouter.ExportName(toolrouter.FormatMCP, name))
			continue
		}
		if mt.InputSchema == nil || mt.Description == "" {
			t.Errorf("%s: inputSchema %v, description %q", name, mt.InputSchema, mt.Description)
		}
	}
	if len(listed) != 7 {
		t.Errorf("listed %d tools, want 7", len(listed))
	}
	echo := toolrouter.ExportName(toolrouter.FormatMCP, "test/echo")
	if echo == "test/echo" {
		t.Fatalf("test/echo is not a valid MCP name; want an alias, got %q", echo)
	}

	res := mcpCall(t, cs, echo, map[string]any{"msg": "hi"})
	if res.IsError || mcpText(res) != `{"msg":"hi"}` {
		t.Fatalf("echo: isError %v, text %q", res.IsError, mcpText(res))
	}
	if sc, _ := res.StructuredContent.(map[string]any); sc["msg"] != "hi" {
		t.Errorf("echo structuredContent = %#v", res.StructuredContent)
	}
	want, _ := toolrouter.ToolCallID(mcpserver.SessionPlanID(cs.ID()), 0)
	if res.Meta["toolrouter/tool_call_id"] != want {
		t.Errorf("tool_call_id %v, want %s (plan mcp-<session>, sequence 0)", res.Meta["toolrouter/tool_call_id"], want)
	}
	// The tool itself sees the same plan and id as on /route.
	res = mcpCall(t, cs, toolrouter.ExportName(toolrouter.FormatMCP, "test/context"), map[string]any{})
	want, _ = toolrouter.ToolCallID(mcpserver.SessionPlanID(cs.ID()), 1)
	if sc, _ := res.StructuredContent.(map[string]any); sc["plan_id"] != mcpserver.SessionPlanID(cs.ID()) || sc["tool_call_id"] != want {
		t.Errorf("test/context saw %v, want plan mcp-%s and id %s", res.StructuredContent, cs.ID(), want)
	}

	res = mcpCall(t, cs, toolrouter.ExportName(toolrouter.FormatMCP, "test/fail"), map[string]any{})
	if !res.IsError || !strings.Contains(mcpText(res), "boom") || res.Meta["toolrouter/error_category"] != "execution" {
		t.Errorf("test/fail: isError %v, text %q, _meta %v", res.IsError, mcpText(res), res.Meta)
	}
	res = mcpCall(t, cs, toolrouter.ExportName(toolrouter.FormatMCP, "math/add"), map[string]any{"a": 1})
	if !res.IsError || res.Meta["toolrouter/error_category"] != "schema" {
		t.Errorf("math/add without b: isError %v, text %q, _meta %v", res.IsError, mcpText(res), res.Meta)
	}
	res = mcpCall(t, cs, "nope", map[string]any{})
	if !res.IsError || !strings.Contains(mcpText(res), "nope") || res.Meta["toolrouter/error_category"] != "not_found" {
		t.Errorf("unknown tool: isError %v, text %q, _meta %v", res.IsError, mcpText(res), res.Meta)
	}

	// A reload that adds a tool is announced, and the list shows it.
	added := strings.Replace(reg, "\ntools:\n", "\ntools:\n  - {name: test/added, endpoint: 'http://"+tools.addr+"/echo'}\n", 1)
	if added == reg {
		t.Fatal("could not add a tool to the example registry")
	}
	if err := os.WriteFile(path, []byte(added), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := rt.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatalf("no notifications/tools/list_changed after SIGHUP\n%s", rt.Output())
	}
	if _, ok := mcpTools(t, cs)[toolrouter.ExportName(toolrouter.FormatMCP, "test/added")]; !ok {
		t.Error("test/added not listed after the reload")
	}

	// SIGTERM with the session (and its GET stream) still open: the process
	// closes the session and exits promptly, not at the 30 s shutdown timeout.
	start := time.Now()
	if err := rt.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rt.done:
	case <-time.After(8 * time.Second):
		t.Fatalf("still running %s after SIGTERM with an MCP session open", time.Since(start))
	}
	if code := rt.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d after SIGTERM\n%s", code, rt.Output())
	}
}

// bearer adds an Authorization header to every request.
type bearer struct {
	key  string
	base http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.base.RoundTrip(r)
}

// TestMCPServerAuth: /mcp takes the same API keys as the rest of the API.
func TestMCPServerAuth(t *testing.T) {
	tools := startTools(t)
	rt, _ := startRouter(t, exampleRegistry(t, tools.addr), "TOOLROUTER_API_KEYS=k1, k2")

	initialize := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "curl", "version": "0"}}}
	r := do(t, "POST", rt.URL()+"/mcp", initialize, "Accept", "application/json, text/event-stream")
	if r.Status != http.StatusUnauthorized {
		t.Fatalf("POST /mcp without a key: %d %s", r.Status, r.Body)
	}
	r = do(t, "POST", rt.URL()+"/mcp", initialize, "Accept", "application/json, text/event-stream", "Authorization", "Bearer wrong")
	if r.Status != http.StatusUnauthorized {
		t.Errorf("POST /mcp with a wrong key: %d %s", r.Status, r.Body)
	}
	if _, err := mcpConnect(t, rt.URL(), nil, nil); err == nil {
		t.Error("the MCP client connected without a key")
	}

	hc := &http.Client{Transport: bearer{key: "k2", base: http.DefaultTransport}}
	cs, err := mcpConnect(t, rt.URL(), hc, nil)
	if err != nil {
		t.Fatalf("connect with a key: %v", err)
	}
	echo := toolrouter.ExportName(toolrouter.FormatMCP, "test/echo")
	if _, ok := mcpTools(t, cs)[echo]; !ok {
		t.Fatalf("%s not listed", echo)
	}
	res := mcpCall(t, cs, echo, map[string]any{"msg": "authorized"})
	if res.IsError || mcpText(res) != `{"msg":"authorized"}` {
		t.Errorf("echo with a key: isError %v, text %q", res.IsError, mcpText(res))
	}
}
