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

// TestNotFoundSuggestsOnlyWhatTheClientMayCall: a misspelt tool name gets
// "did you mean" the closest name the client may call, and only such a
// name: never a tool out of the client's scope or outside its view, so a
// tool out of scope stays indistinguishable from a missing one
// (docs/security.md "Clients").
func TestNotFoundSuggestsOnlyWhatTheClientMayCall(t *testing.T) {
	const key = "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
	reg, err := registry.Parse("test.yaml", []byte(testRegistry+`  - name: get_weather
    endpoint: http://127.0.0.1:9/weather
    kind: tool
    input_schema: {type: object}
virtual_servers:
  - name: v
    tools: ["test/echo"]
    overrides:
      test/echo: {name: say}
  - name: s
    tools: ["*"]
    discovery: search
clients:
  - {name: echoer, key_sha256: "`+key+`", tools: ["test/echo"]}
  - {name: bound, key_sha256: "`+strings.Repeat("e", 64)+`", virtual_servers: [v]}
`), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	rt := &rig{Tools: func() pipeline.Tools { return reg }, Exec: &stubExec{}, Seq: memory.New()}
	clients := access.NewClients(nil, reg.Clients())
	set := vserver.Build(reg)
	errOf := func(ctx context.Context, name string, args map[string]any) string {
		t.Helper()
		res, err := rt.Route(ctx, "p", map[string]any{"name": name, "arguments": args}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Success || res.Error == nil || *res.ErrorCategory != toolrouter.CategoryNotFound {
			t.Fatalf("%s: %+v, want not found", name, res)
		}
		return *res.Error
	}
	bg := context.Background()
	echoer := access.NewContext(bg, clients.ByName("echoer"))
	for _, tc := range []struct {
		what string
		ctx  context.Context
		name string
		args map[string]any
		want string
	}{
		{"no client", bg, "get_wether", nil, "Tool 'get_wether' not found; did you mean 'get_weather'?"},
		{"no client, nothing close", bg, "delete_everything", nil, "Tool 'delete_everything' not found"},
		{"in scope", echoer, "test/ecoh", nil, "Tool 'test/ecoh' not found; did you mean 'test/echo'?"},
		// get_weather and test/check exist but are out of the client's scope.
		{"out of scope", echoer, "get_wether", nil, "Tool 'get_wether' not found"},
		{"out of scope, exact", echoer, "get_weather", nil, "Tool 'get_weather' not found"},
		{"out of scope, close", echoer, "test/chek", nil, "Tool 'test/chek' not found"},
		{"view", inView(bg, set.View("v")), "sya", nil, "Tool 'sya' not found; did you mean 'say'?"},
		{"view hides the real name", inView(bg, set.View("v")), "test/ecoh", nil, "Tool 'test/ecoh' not found"},
		{"search view, call_tool", inView(bg, set.View("s")), "call_tool", map[string]any{"name": "get_wether"},
			"Tool 'get_wether' not found; did you mean 'get_weather'?"},
		{"search view, call_tool, out of scope", inView(echoer, set.View("s")), "call_tool", map[string]any{"name": "get_wether"},
			"Tool 'get_wether' not found"},
		{"bound client without a view", access.NewContext(bg, clients.ByName("bound")), "sya", nil, "Tool 'sya' not found"},
	} {
		if got := errOf(tc.ctx, tc.name, tc.args); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.what, got, tc.want)
		}
	}
}
