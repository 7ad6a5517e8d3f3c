package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/exampletools"
	"github.com/toolrouterd/toolrouterd/internal/mcpserver"
	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/poll"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/remote"
	"github.com/toolrouterd/toolrouterd/internal/router"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

const registryYAML = `
tools:
  - name: test/echo
    description: Returns its arguments.
    endpoint: TOOLS/echo
    input_schema:
      type: object
      properties:
        msg: {type: string}
  - name: math/add
    description: Adds a and b.
    endpoint: TOOLS/add
    input_schema:
      type: object
      properties:
        a: {type: number}
        b: {type: number}
      required: [a, b]
    output_schema:
      type: object
      properties:
        sum: {type: number}
    idempotent: true
  - name: test/fail
    description: Always fails.
    endpoint: TOOLS/fail
    input_schema: {type: object}
  - name: test/validator
    description: Always passes.
    endpoint: TOOLS/validate/pass
    kind: validation
    input_schema: {type: object}
    output_schema: {mode: strict}
  - name: test/big
    description: A JSON string.
    endpoint: TOOLS/big
    input_schema: {type: object}
`

const extraTool = `
  - name: test/added
    description: Added by a reload.
    endpoint: TOOLS/echo
    input_schema: {type: object}
`

// regs holds the registry in force, swapped by tests to simulate a reload.
type regs struct {
	cur atomic.Pointer[registry.Registry]
}

func (r *regs) Current() *registry.Registry { return r.cur.Load() }

func parse(t *testing.T, tools, yaml string) *registry.Registry {
	t.Helper()
	reg, err := registry.Parse("registry.yaml", []byte(strings.ReplaceAll(yaml, "TOOLS", tools)), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

type env struct {
	h     *mcpserver.Handler
	url   string
	reg   *regs
	tools string
}

func newEnv(t *testing.T, opts ...func(*mcpserver.Deps)) *env {
	t.Helper()
	toolSrv := httptest.NewServer(exampletools.Handler())
	t.Cleanup(toolSrv.Close)
	e := &env{reg: &regs{}, tools: toolSrv.URL}
	e.reg.cur.Store(parse(t, toolSrv.URL, registryYAML))
	exec := remote.New(remote.Options{})
	t.Cleanup(exec.CloseIdle)
	rt := router.New(router.Options{Exec: exec, Seq: memory.New(), Finish: &router.Finisher{},
		Stages: []toolrouter.Stage{pipeline.Resolve(func() pipeline.Tools { return e.reg.Current() }), pipeline.Validate, pipeline.CheckOutput}})
	deps := mcpserver.Deps{
		Router: rt,
		Tools:  func() mcpserver.Tools { return e.reg.Current() },
		Logger: zerolog.New(zerolog.NewTestWriter(t)),
	}
	for _, o := range opts {
		o(&deps)
	}
	e.h = mcpserver.New(deps)
	srv := httptest.NewServer(e.h)
	t.Cleanup(func() { e.h.Close(); srv.Close() })
	e.url = srv.URL
	return e
}

// legacy makes a client initialize a session (protocol 2025-11-25) rather
// than speak 2026-07-28, the SDK's default.
var legacy = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

// connect opens a session (protocol 2025-11-25).
func connect(t *testing.T, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectVersion(t, url, opts, legacy)
}

// connectVersion connects with the protocol version of so (nil: the SDK's
// latest, 2026-07-28, which is stateless).
func connectVersion(t *testing.T, url string, opts *mcp.ClientOptions, so *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, opts)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, so)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func listTools(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
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

func call(t *testing.T, cs *mcp.ClientSession, name string, args any, meta mcp.Meta) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

func mcpName(canonical string) string { return toolrouter.ExportName(toolrouter.FormatMCP, canonical) }

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content has %d blocks, want 1: %+v", len(res.Content), res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

func TestMCPServerListTools(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, e.url, nil)
	if got := cs.InitializeResult().ServerInfo.Name; got != "toolrouterd" {
		t.Errorf("serverInfo.name = %q", got)
	}
	tools := listTools(t, cs)
	if len(tools) != 5 {
		t.Fatalf("listed %d tools, want 5: %v", len(tools), tools)
	}
	echo := tools[mcpName("test/echo")]
	if echo == nil {
		t.Fatalf("test/echo not listed under %q: %v", mcpName("test/echo"), tools)
	}
	if mcpName("test/echo") == "test/echo" || !strings.HasPrefix(echo.Name, "test_echo_") {
		t.Errorf("test/echo exported as %q, want an MCP-safe alias", echo.Name)
	}
	if echo.Title != "test/echo" || echo.Meta[mcpserver.MetaToolName] != "test/echo" {
		t.Errorf("alias does not name the canonical tool: title %q, _meta %v", echo.Title, echo.Meta)
	}
	if echo.Description != "Returns its arguments." {
		t.Errorf("description = %q", echo.Description)
	}
	schema, _ := json.Marshal(echo.InputSchema)
	if string(schema) != `{"properties":{"msg":{"type":"string"}},"type":"object"}` {
		t.Errorf("inputSchema = %s", schema)
	}
	if echo.OutputSchema != nil {
		t.Errorf("test/echo has an outputSchema: %v", echo.OutputSchema)
	}
	add := tools[mcpName("math/add")]
	if add == nil {
		t.Fatal("math/add not listed")
	}
	if add.Annotations == nil || !add.Annotations.IdempotentHint || add.Annotations.ReadOnlyHint {
		t.Errorf("math/add annotations = %+v, want idempotentHint only", add.Annotations)
	}
	// An HTTP tool's outputs are checked against its output_schema (docs/trusting-tools.md
	// "Typed outputs"): it is advertised.
	if out, _ := json.Marshal(add.OutputSchema); string(out) != `{"properties":{"sum":{"type":"number"}},"type":"object"}` {
		t.Errorf("math/add outputSchema = %s, want its output_schema", out)
	}
	// {mode: strict} is not a JSON Schema object: no outputSchema.
	if v := tools[mcpName("test/validator")]; v == nil || v.OutputSchema != nil {
		t.Errorf("test/validator = %+v, want listed without outputSchema", v)
	}
}

func TestMCPServerCallEcho(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, e.url, nil)
	res := call(t, cs, mcpName("test/echo"), map[string]any{"msg": "hi"}, nil)
	if res.IsError {
		t.Fatalf("isError: %s", text(t, res))
	}
	if got := text(t, res); got != `{"msg":"hi"}` {
		t.Errorf("text = %s", got)
	}
	sc, ok := res.StructuredContent.(map[string]any)
	if !ok || sc["msg"] != "hi" || len(sc) != 1 {
		t.Errorf("structuredContent = %#v", res.StructuredContent)
	}
	plan := mcpserver.SessionPlanID(cs.ID())
	if cs.ID() == "" {
		t.Fatal("no MCP session id")
	}
	want0, _ := toolrouter.ToolCallID(plan, 0)
	if res.Meta[mcpserver.MetaToolCallID] != want0 || res.Meta[mcpserver.MetaSequence] != float64(0) ||
		res.Meta[mcpserver.MetaPlanID] != plan || res.Meta[mcpserver.MetaToolName] != "test/echo" {
		t.Errorf("_meta = %v, want tool_call_id %s, sequence 0, plan %s", res.Meta, want0, plan)
	}

	// The canonical name works too, and the session's next call gets the
	// next sequence.
	res = call(t, cs, "test/echo", map[string]any{"msg": "again"}, nil)
	want1, _ := toolrouter.ToolCallID(plan, 1)
	if res.IsError || res.Meta[mcpserver.MetaToolCallID] != want1 || res.Meta[mcpserver.MetaSequence] != float64(1) {
		t.Errorf("second call: isError %v, _meta %v, want tool_call_id %s", res.IsError, res.Meta, want1)
	}

	// Another session is another plan: its sequence starts at 0.
	cs2 := connect(t, e.url, nil)
	res = call(t, cs2, mcpName("test/echo"), map[string]any{}, nil)
	if res.Meta[mcpserver.MetaSequence] != float64(0) || res.Meta[mcpserver.MetaPlanID] != mcpserver.SessionPlanID(cs2.ID()) {
		t.Errorf("other session: _meta %v", res.Meta)
	}
}

func TestMCPServerPlanIDFromMeta(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, e.url, nil)
	for seq := range 2 {
		res := call(t, cs, mcpName("math/add"), map[string]any{"a": 1, "b": 2}, mcp.Meta{mcpserver.MetaPlanID: "plan-mcp-1"})
		want, _ := toolrouter.ToolCallID("plan-mcp-1", int64(seq))
		if res.IsError || res.Meta[mcpserver.MetaToolCallID] != want || res.Meta[mcpserver.MetaPlanID] != "plan-mcp-1" {
			t.Errorf("call %d: isError %v, _meta %v, want %s", seq, res.IsError, res.Meta, want)
		}
		if sc, _ := res.StructuredContent.(map[string]any); sc["sum"] != float64(3) {
			t.Errorf("structuredContent = %#v", res.StructuredContent)
		}
	}
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test/echo", Arguments: map[string]any{}, Meta: mcp.Meta{mcpserver.MetaPlanID: ""}})
	if err == nil || !strings.Contains(err.Error(), mcpserver.MetaPlanID) {
		t.Errorf("empty plan id: err = %v, want invalid params naming %s", err, mcpserver.MetaPlanID)
	}
}

func TestMCPServerCallFailures(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, e.url, nil)
	tests := []struct {
		name     string
		tool     string
		args     map[string]any
		text     string
		category string
	}{
		{"tool fails", mcpName("test/fail"), map[string]any{}, "boom", "execution"},
		{"schema violation", mcpName("math/add"), map[string]any{"a": 1}, "b", "schema"},
		{"wrong type", mcpName("math/add"), map[string]any{"a": 1, "b": "two"}, "b", "schema"},
		{"unknown tool", "no_such_tool", map[string]any{}, "no_such_tool", "not_found"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, cs, tc.tool, tc.args, nil)
			if !res.IsError {
				t.Fatalf("isError false: %+v", res)
			}
			if got := text(t, res); !strings.Contains(got, tc.text) {
				t.Errorf("text %q does not contain %q", got, tc.text)
			}
			if res.Meta[mcpserver.MetaErrorCategory] != tc.category {
				t.Errorf("category = %v, want %s", res.Meta[mcpserver.MetaErrorCategory], tc.category)
			}
			if res.StructuredContent != nil {
				t.Errorf("structuredContent on a failure: %v", res.StructuredContent)
			}
			// Failures take sequences too, like on /route.
			if res.Meta[mcpserver.MetaSequence] != float64(i) {
				t.Errorf("sequence = %v, want %d", res.Meta[mcpserver.MetaSequence], i)
			}
		})
	}
}

func TestMCPServerNonObjectOutput(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, e.url, nil)
	res := call(t, cs, mcpName("test/big"), map[string]any{"bytes": 3}, nil)
	if res.IsError {
		t.Fatalf("isError: %s", text(t, res))
	}
	// A string output is its own text (as in /route's provider_result).
	if got := text(t, res); got != "xxx" {
		t.Errorf("text = %q, want the string itself, xxx", got)
	}
	if res.StructuredContent != nil {
		t.Errorf("structuredContent = %v, want none for a non-object output", res.StructuredContent)
	}

	res = call(t, cs, mcpName("test/validator"), map[string]any{}, nil)
	if res.IsError || res.Meta[mcpserver.MetaValidationPassed] != true {
		t.Errorf("validator: isError %v, _meta %v", res.IsError, res.Meta)
	}
}

func TestMCPServerFollowsReload(t *testing.T) {
	e := newEnv(t)
	changed := make(chan struct{}, 10)
	cs := connect(t, e.url, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if _, ok := listTools(t, cs)[mcpName("test/added")]; ok {
		t.Fatal("test/added listed before the reload")
	}

	// A reload that changes nothing visible sends no notification.
	e.reg.cur.Store(parse(t, e.tools, registryYAML))
	e.h.Sync()
	select {
	case <-changed:
		t.Error("list_changed after a reload with the same tools")
	case <-time.After(200 * time.Millisecond):
	}

	e.reg.cur.Store(parse(t, e.tools, registryYAML+extraTool))
	e.h.Sync()
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tools/list_changed after the reload")
	}
	tools := listTools(t, cs)
	if _, ok := tools[mcpName("test/added")]; !ok || len(tools) != 6 {
		t.Fatalf("after the reload: %d tools, test/added listed %v", len(tools), ok)
	}
	if res := call(t, cs, mcpName("test/added"), map[string]any{"x": 1}, nil); res.IsError {
		t.Errorf("new tool: %s", text(t, res))
	}

	// Without Sync, tools/list still follows the registry in force.
	e.reg.cur.Store(parse(t, e.tools, strings.Replace(registryYAML, "  - name: test/big", "  - name: test/gone-big", 1)))
	tools = listTools(t, cs)
	if _, ok := tools[mcpName("test/big")]; ok {
		t.Error("test/big still listed after it was removed")
	}
	if _, ok := tools[mcpName("test/gone-big")]; !ok {
		t.Error("test/gone-big not listed")
	}
	if res := call(t, cs, mcpName("test/big"), map[string]any{}, nil); !res.IsError || res.Meta[mcpserver.MetaErrorCategory] != "not_found" {
		t.Errorf("removed tool: isError %v, _meta %v", res.IsError, res.Meta)
	}
}

// TestMCPServerSessionCap: sessions beyond MaxSessions are refused with
// 503 until one closes.
func TestMCPServerSessionCap(t *testing.T) {
	e := newEnv(t, func(d *mcpserver.Deps) { d.MaxSessions = 2 })
	a := connect(t, e.url, nil)
	connect(t, e.url, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "third", Version: "v0"}, nil)
	if cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url}, legacy); err == nil {
		cs.Close()
		t.Fatal("a third session was accepted over MaxSessions=2")
	} else if !strings.Contains(err.Error(), "503") && !strings.Contains(err.Error(), "Service Unavailable") && !strings.Contains(err.Error(), "too many") {
		t.Errorf("refusal: %v", err)
	}
	// Existing sessions keep working, and closing one makes room.
	if _, err := a.ListTools(ctx, nil); err != nil {
		t.Errorf("existing session: %v", err)
	}
	a.Close()
	poll.Until(t, 5*time.Second, func() error {
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url}, legacy)
		if err != nil {
			return fmt.Errorf("no room after a session closed: %v", err)
		}
		cs.Close()
		return nil
	})
}
