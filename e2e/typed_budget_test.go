package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestTypedOutputUnderABudgetIsNotAdvertised: a tool whose outputs an
// output budget may cut (its own, or its virtual server's) lists no
// outputSchema on /mcp, since MCP clients reject a structuredContent that
// does not match it and a cut output does not; one without a budget keeps
// it. A cut output then reaches the client as a result.
func TestTypedOutputUnderABudgetIsNotAdvertised(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	rt, _ := startRouter(t, fmt.Sprintf(`tools:
  - name: typed/echo
    endpoint: "http://%[1]s/echo"
    input_schema: {type: object, properties: {msg: {type: string}}}
    output_schema: {type: object, properties: {msg: {type: string}}, required: [msg]}
  - name: typed/cut
    endpoint: "http://%[1]s/echo"
    input_schema: {type: object, properties: {msg: {type: string}}}
    output_schema: {type: object, properties: {msg: {type: string}}, required: [msg]}
    max_output_bytes: 256
virtual_servers:
  - {name: lean, tools: [typed/echo], max_output_bytes: 256}
`, tools.addr))
	connect := func(endpoint string) *mcp.ClientSession {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("%s: %v", endpoint, err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	echo, cut := toolrouter.ExportName(toolrouter.FormatMCP, "typed/echo"), toolrouter.ExportName(toolrouter.FormatMCP, "typed/cut")
	direct := connect(rt.URL() + "/mcp")
	listed := mcpTools(t, direct)
	if listed[echo] == nil || listed[echo].OutputSchema == nil {
		t.Errorf("/mcp typed/echo: %+v, want its outputSchema", listed[echo])
	}
	if listed[cut] == nil || listed[cut].OutputSchema != nil {
		t.Errorf("/mcp typed/cut (max_output_bytes 256): %+v, want listed without outputSchema", listed[cut])
	}
	if v := mcpTools(t, connect(rt.URL()+"/mcp/lean"))[echo]; v == nil || v.OutputSchema != nil {
		t.Errorf("/mcp/lean typed/echo (the view's max_output_bytes 256): %+v, want listed without outputSchema", v)
	}
	res := mcpCall(t, direct, cut, map[string]any{"msg": strings.Repeat("x", 2000)})
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("cut typed output: %+v, want a result", res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; len(text) > 256 || !strings.Contains(text, "cut") && !strings.Contains(text, "shaped") && !strings.Contains(text, "…") {
		t.Errorf("cut typed output's text (%d bytes): %.300s", len(text), text)
	}
}
