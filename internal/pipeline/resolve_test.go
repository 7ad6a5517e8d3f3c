package pipeline_test

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

// TestRouteWithinView: in a virtual server's view the exported name
// routes to the real tool with the defaults filled in, call_tool and
// search_tools work in search mode, and a client bound to virtual servers
// reaches no tool without one.
func TestRouteWithinView(t *testing.T) {
	reg, err := registry.Parse("test.yaml", []byte(testRegistry+`virtual_servers:
  - name: v
    tools: ["test/echo"]
    overrides:
      test/echo: {name: say, defaults: {msg: fixed}}
  - name: s
    tools: ["*"]
    discovery: search
clients:
  - {name: bound, key_sha256: "`+"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"+`", virtual_servers: [v]}
`), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	exec := &stubExec{Out: toolrouter.Outcome{Output: []byte(`{"ok":true}`), Answered: true}}
	rt := &rig{Tools: func() pipeline.Tools { return reg }, Exec: exec, Seq: memory.New()}
	set := vserver.Build(reg)
	route := func(ctx context.Context, name string, args map[string]any) *toolrouter.Result {
		t.Helper()
		res, err := rt.Route(ctx, "p", map[string]any{"name": name, "arguments": args}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	inV := inView(context.Background(), set.View("v"))
	res := route(inV, "say", map[string]any{"msg": "mine"})
	if !res.Success || res.ToolName != "test/echo" || !reflect.DeepEqual(exec.Req.Args, map[string]any{"msg": "fixed"}) {
		t.Fatalf("say: %+v, tool got %v", res, exec.Req.Args)
	}
	if res := route(inV, "test/echo", nil); res.Success || *res.ErrorCategory != toolrouter.CategoryNotFound {
		t.Fatalf("the real name in the view: %+v", res)
	}
	inS := inView(context.Background(), set.View("s"))
	if res := route(inS, "call_tool", map[string]any{"name": "test/echo", "arguments": map[string]any{"msg": "hi"}}); !res.Success || res.ToolName != "test/echo" || exec.Req.Args["msg"] != "hi" {
		t.Fatalf("call_tool: %+v", res)
	}
	// The provider's result answers the call the model made: call_tool.
	res, err = rt.Route(inS, "p", map[string]any{"functionCall": map[string]any{"name": "call_tool", "args": map[string]any{"name": "test/echo"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res.ProviderResult); !strings.Contains(string(b), `"name":"call_tool"`) {
		t.Fatalf("gemini result %s", b)
	}
	if res := route(inS, "search_tools", map[string]any{"query": "echo"}); !res.Success || string(res.Output) == "" {
		t.Fatalf("search_tools: %+v", res)
	}
	bound := access.NewContext(context.Background(), access.NewClients(nil, reg.Clients()).ByName("bound"))
	if res := route(bound, "test/echo", nil); res.Success || *res.ErrorCategory != toolrouter.CategoryNotFound {
		t.Fatalf("a bound client without a view: %+v", res)
	}
}

// The arguments a run's actor context adds (RouteWith's extra) do not
// override what a virtual server fixes: its defaults and hidden
// arguments.
func TestExtraArgumentsDoNotOverrideAViewsFixedArguments(t *testing.T) {
	reg, err := registry.Parse("test.yaml", []byte(testRegistry+`  - name: test/box
    endpoint: http://127.0.0.1:9/box
    input_schema:
      type: object
      properties: {path: {type: string}, sandbox_root: {type: string}, resource_bindings: {type: object}}
virtual_servers:
  - name: v
    tools: ["test/box"]
    overrides:
      test/box: {defaults: {sandbox_root: /srv/tenant-a}, hidden: [resource_bindings]}
`), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	exec := &stubExec{Out: toolrouter.Outcome{Output: []byte(`{"ok":true}`), Answered: true}}
	rt := &rig{Tools: func() pipeline.Tools { return reg }, Exec: exec, Seq: memory.New()}
	inV := inView(context.Background(), vserver.Build(reg).View("v"))
	extra := map[string]any{"sandbox_root": "/", "resource_bindings": map[string]any{"db": "prod"}}
	res, err := rt.RouteWith(inV, "p", map[string]any{"name": "test/box", "arguments": map[string]any{"path": "x"}}, nil, extra)
	if err != nil || !res.Success {
		t.Fatalf("%+v %v", res, err)
	}
	if want := map[string]any{"path": "x", "sandbox_root": "/srv/tenant-a"}; !reflect.DeepEqual(exec.Req.Args, want) {
		t.Fatalf("the tool got %v, want %v", exec.Req.Args, want)
	}
	// Outside a view, the actor context's arguments are added as before.
	if _, err := rt.RouteWith(context.Background(), "p", map[string]any{"name": "test/box", "arguments": map[string]any{"path": "x"}}, nil, extra); err != nil || exec.Req.Args["sandbox_root"] != "/" {
		t.Fatalf("without a view the tool got %v", exec.Req.Args)
	}
}

// TestCanonical: the name a refused request's audit record keeps is the
// tool the call would reach, found as Route finds it: a provider alias
// and a view's exported name become the registry name; a name that
// reaches nothing (unknown, call_tool without arguments, a bound client
// without a view) stays as sent.
func TestCanonical(t *testing.T) {
	reg, err := registry.Parse("test.yaml", []byte(testRegistry+`virtual_servers:
  - name: v
    tools: ["test/echo"]
    overrides:
      test/echo: {name: say}
  - name: s
    tools: ["*"]
    discovery: search
clients:
  - {name: bound, key_sha256: "`+"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"+`", virtual_servers: [v]}
`), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	rt := &rig{Tools: func() pipeline.Tools { return reg }}
	set := vserver.Build(reg)
	bg := context.Background()
	inV := inView(bg, set.View("v"))
	inS := inView(bg, set.View("s"))
	bound := access.NewContext(bg, access.NewClients(nil, reg.Clients()).ByName("bound"))
	alias := toolrouter.ExportName(toolrouter.FormatOpenAI, "test/echo")
	for _, c := range []struct {
		ctx        context.Context
		name, want string
	}{
		{bg, "test/echo", "test/echo"},
		{bg, alias, "test/echo"},
		{bg, "no/such", "no/such"},
		{inV, "say", "test/echo"},
		{inV, toolrouter.ExportName(toolrouter.FormatOpenAI, "say"), "test/echo"},
		{inV, alias, alias}, // not in the view under that name
		{inS, toolrouter.CallToolName, toolrouter.CallToolName},
		{bound, alias, alias}, // a bound client reaches no tool without a view
	} {
		if got := rt.Canonical(c.ctx, c.name); got != c.want {
			t.Errorf("Canonical(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}
