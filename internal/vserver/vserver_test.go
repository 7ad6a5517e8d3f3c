package vserver_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

const src = `tools:
  - name: gh/create_issue
    description: Create an issue in a GitHub repository
    endpoint: http://tools.example/ci
    input_schema:
      type: object
      required: [repo, title]
      properties:
        repo: {type: string}
        title: {type: string, description: The issue's title}
        labels: {type: array, items: {type: string}}
  - name: gh/list_issues
    description: List the issues of a repository
    endpoint: http://tools.example/li
  - name: crm/create_ticket
    description: Open a support ticket for a customer
    endpoint: http://tools.example/ct
    input_schema: {type: object, properties: {customerEmail: {type: string, description: the customer's e-mail address}}}
  - name: weather/forecast
    description: The weather forecast for a city
    endpoint: http://tools.example/wf
virtual_servers:
  - name: support
    tools: ["gh/*", "crm/create_ticket"]
    overrides:
      gh/create_issue: {name: file_bug, description: File a bug in our tracker, title: File a bug,
                        annotations: {destructiveHint: false}, defaults: {repo: acme/app}, hidden: [labels]}
  - name: finder
    tools: ["*"]
    discovery: search
  - name: coder
    tools: ["gh/*"]
    discovery: code
    overrides:
      gh/create_issue: {name: file_bug, defaults: {repo: acme/app}, hidden: [labels]}
clients:
  - {name: bound, key_sha256: "` + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + `", virtual_servers: [support]}
  - {name: gh-only, key_sha256: "` + "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" + `", tools: ["gh/*"]}
`

func setup(t *testing.T) (*vserver.Set, *access.Clients) {
	t.Helper()
	reg, err := registry.Parse("r.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	return vserver.Build(reg), access.NewClients(nil, reg.Clients())
}

func names(tools []*toolrouter.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

func TestCuratedView(t *testing.T) {
	set, _ := setup(t)
	v, err := set.For(nil, "support")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(v.Tools(nil)); !reflect.DeepEqual(got, []string{"file_bug", "gh/list_issues", "crm/create_ticket"}) {
		t.Fatalf("tools %v", got)
	}
	bug := v.Tools(nil)[0]
	if bug.Description != "File a bug in our tracker" || bug.Title != "File a bug" || bug.Hints == nil || *bug.Hints.Destructive || bug.Endpoint != "" {
		t.Fatalf("exported %+v", bug)
	}
	props := bug.InputSchema["properties"].(map[string]any)
	if _, ok := props["repo"]; ok {
		t.Errorf("defaulted argument repo still in the schema: %v", props)
	}
	if _, ok := props["labels"]; ok {
		t.Errorf("hidden argument labels still in the schema: %v", props)
	}
	if req := bug.InputSchema["required"]; !reflect.DeepEqual(req, []any{"title"}) {
		t.Errorf("required %v", req)
	}
	// The call: exported name → real tool, defaults filled in, hidden dropped.
	call := toolrouter.Call{ToolName: "file_bug", Arguments: map[string]any{"title": "t", "labels": []any{"x"}, "repo": "evil/repo"}}
	tool, local, ok := v.Resolve(nil, &call)
	if !ok || local != nil || tool.Name != "gh/create_issue" {
		t.Fatalf("resolve: %v %v %v", tool, local, ok)
	}
	if want := map[string]any{"title": "t", "repo": "acme/app"}; !reflect.DeepEqual(call.Arguments, want) {
		t.Fatalf("arguments %v, want %v", call.Arguments, want)
	}
	// The real name and tools outside the view do not resolve.
	for _, name := range []string{"gh/create_issue", "gh_create_issue", "weather/forecast", "search_tools"} {
		c := toolrouter.Call{ToolName: name}
		if _, _, ok := v.Resolve(nil, &c); ok {
			t.Errorf("%s resolves in the view", name)
		}
	}
	// An alias of an exported name resolves (providers reject "/").
	c := toolrouter.Call{ToolName: toolrouter.ExportName(toolrouter.FormatOpenAI, "crm/create_ticket")}
	if tool, _, ok := v.Resolve(nil, &c); !ok || tool.Name != "crm/create_ticket" {
		t.Errorf("alias: %v %v", tool, ok)
	}
}

func TestForClients(t *testing.T) {
	set, cs := setup(t)
	bound := cs.ByName("bound")
	if _, err := set.For(bound, "finder"); err == nil || !strings.Contains(err.Error(), `unknown virtual server "finder"`) {
		t.Fatalf("bound client got another server: %v", err)
	}
	if _, err := set.For(nil, "nope"); err == nil {
		t.Fatal("unknown server")
	}
	v, err := set.For(bound, "")
	if err != nil || v == nil || len(v.Tools(bound)) != 0 {
		t.Fatalf("a bound client naming no server: %v %v", v, err)
	}
	if v, _ := set.For(nil, ""); v != nil {
		t.Fatal("no registry-wide view without discovery: search")
	}
	// Scopes apply inside a view.
	gh := cs.ByName("gh-only")
	sv, _ := set.For(gh, "support")
	if got := names(sv.Tools(gh)); !reflect.DeepEqual(got, []string{"file_bug", "gh/list_issues"}) {
		t.Fatalf("scoped tools %v", got)
	}
	if sv.Visible(gh, "crm/create_ticket") || !sv.Visible(gh, "file_bug") {
		t.Fatal("Visible disagrees with the scope")
	}
}

func search(t *testing.T, v *vserver.View, c *access.Client, args map[string]any) []vserver.Found {
	t.Helper()
	call := toolrouter.Call{ToolName: "search_tools", Arguments: args}
	_, local, ok := v.Resolve(c, &call)
	if !ok || local == nil || !local.Success() {
		t.Fatalf("search_tools: %v %+v", ok, local)
	}
	var out struct{ Tools []vserver.Found }
	if err := json.Unmarshal(local.Output, &out); err != nil {
		t.Fatal(err)
	}
	return out.Tools
}

func TestSearchMode(t *testing.T) {
	set, cs := setup(t)
	v := set.View("finder")
	if got := names(v.Tools(nil)); !reflect.DeepEqual(got, []string{"search_tools", "call_tool"}) {
		t.Fatalf("listed %v", got)
	}
	found := search(t, v, nil, map[string]any{"query": "open a ticket for a customer", "limit": float64(2)})
	if len(found) == 0 || found[0].Name != "crm/create_ticket" || len(found) > 2 {
		t.Fatalf("found %+v", found)
	}
	// camelCase parameter names are split: "e-mail" and "email" match customerEmail.
	if found := search(t, v, nil, map[string]any{"query": "email"}); len(found) != 1 || found[0].Name != "crm/create_ticket" {
		t.Fatalf("found %+v", found)
	}
	if found := search(t, v, nil, map[string]any{"query": "forecast weather"}); len(found) == 0 || found[0].Name != "weather/forecast" {
		t.Fatalf("found %+v", found)
	}
	// Only the tools the caller may use are found.
	gh := cs.ByName("gh-only")
	for _, f := range search(t, v, gh, map[string]any{"query": "ticket issue weather"}) {
		if !strings.HasPrefix(f.Name, "gh/") {
			t.Fatalf("a gh-only client found %s", f.Name)
		}
	}
	// call_tool is the call it carries.
	call := toolrouter.Call{ToolName: "call_tool", Arguments: map[string]any{"name": "weather/forecast", "arguments": map[string]any{"city": "Oslo"}}}
	tool, local, ok := v.Resolve(nil, &call)
	if !ok || local != nil || tool.Name != "weather/forecast" || call.ToolName != "weather/forecast" || call.Arguments["city"] != "Oslo" {
		t.Fatalf("call_tool: %v %v %v %+v", tool, local, ok, call)
	}
	for _, bad := range []map[string]any{{}, {"name": "x", "arguments": []any{}}} {
		call := toolrouter.Call{ToolName: "call_tool", Arguments: bad}
		if _, local, _ := v.Resolve(nil, &call); local == nil || local.Category != toolrouter.CategorySchema {
			t.Errorf("call_tool %v: %+v", bad, local)
		}
	}
	for _, bad := range []map[string]any{{}, {"query": "x", "limit": float64(0)}, {"query": "x", "limit": 1.5}, {"query": strings.Repeat("x ", 501)}} {
		call := toolrouter.Call{ToolName: "search_tools", Arguments: bad}
		if _, local, _ := v.Resolve(nil, &call); local == nil || local.Category != toolrouter.CategorySchema {
			t.Errorf("search_tools %v: %+v", bad, local)
		}
	}
}

func TestCatalogRebuildsOnChange(t *testing.T) {
	reg, err := registry.Parse("r.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	cur := reg
	cat := vserver.NewCatalog(func() *registry.Registry { return cur }, nil)
	first := cat.Current()
	if cat.Current() != first {
		t.Fatal("rebuilt without a change")
	}
	cur, _ = reg.WithTools([]*toolrouter.Tool{{Name: "gh/close_issue", Description: "Close an issue", Kind: toolrouter.KindTool}})
	if got := names(cat.Current().View("support").Tools(nil)); !reflect.DeepEqual(got, []string{"file_bug", "gh/list_issues", "crm/create_ticket", "gh/close_issue"}) {
		t.Fatalf("after discovery: %v", got)
	}
}

// A hidden or defaulted argument cannot come back under another case of
// its name: decoders such as Go's encoding/json match object keys to
// fields case-insensitively (with Unicode folding: ſ is s, K is k).
func TestHiddenArgumentsIgnoreTheCaseOfTheirName(t *testing.T) {
	set, _ := setup(t)
	call := &toolrouter.Call{ToolName: "file_bug", Arguments: map[string]any{
		"title": "t", "Repo": "evil/one", "REPO": "evil/two", "LABELS": []any{"x"}, "ℓabels": "kept", "laBelſ": []any{"y"}}}
	if _, _, ok := set.View("support").Resolve(nil, call); !ok {
		t.Fatal("file_bug not found")
	}
	want := map[string]any{"title": "t", "repo": "acme/app", "ℓabels": "kept"}
	if !reflect.DeepEqual(call.Arguments, want) {
		t.Fatalf("the tool gets %v, want %v", call.Arguments, want)
	}
}

// TestCodeMode: a view in code mode lists search_tools and execute_code,
// whose search answers give each tool's signature (not its schema), and
// resolves execute_code to the code tool with the view's budget, and the
// names its program calls to their tools.
func TestCodeMode(t *testing.T) {
	set, _ := setup(t)
	v, err := set.For(nil, "coder")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(v.Tools(nil)); !reflect.DeepEqual(got, []string{"search_tools", "execute_code"}) {
		t.Fatalf("tools %v", got)
	}
	if !v.Visible(nil, "execute_code") || v.Visible(nil, "call_tool") || v.Visible(nil, "file_bug") {
		t.Fatal("visible names of code mode")
	}
	call := toolrouter.Call{ToolName: "search_tools", Arguments: map[string]any{"query": "file a bug issue"}}
	_, local, ok := v.Resolve(nil, &call)
	if !ok || local == nil || !local.Success() {
		t.Fatalf("search_tools: %v %+v", ok, local)
	}
	var found struct{ Tools []vserver.Found }
	if err := json.Unmarshal(local.Output, &found); err != nil {
		t.Fatal(err)
	}
	if len(found.Tools) == 0 || found.Tools[0].Name != "file_bug" || found.Tools[0].InputSchema != nil ||
		found.Tools[0].Signature != "tools.file_bug(args: { title: string }): Promise<unknown>" {
		t.Fatalf("found %+v", found.Tools)
	}
	call = toolrouter.Call{ToolName: "execute_code", Arguments: map[string]any{"code": "return 1"}}
	tool, local, ok := v.Resolve(nil, &call)
	if !ok || local != nil || tool == nil || !tool.Code || tool.Name != "execute_code" {
		t.Fatalf("execute_code resolved to %+v %+v", tool, local)
	}
	call = toolrouter.Call{ToolName: "file_bug", Arguments: map[string]any{"title": "x"}}
	if tool, _, ok := v.Resolve(nil, &call); !ok || tool.Name != "gh/create_issue" || call.Arguments["repo"] != "acme/app" {
		t.Fatalf("a program's call resolved to %+v %v", tool, call.Arguments)
	}
	// Search mode gives signatures too, with the schemas.
	f, _ := set.For(nil, "finder")
	call = toolrouter.Call{ToolName: "search_tools", Arguments: map[string]any{"query": "weather forecast"}}
	_, local, _ = f.Resolve(nil, &call)
	if !strings.Contains(string(local.Output), `"signature":"tools[\"weather/forecast\"](args?: {}): Promise<unknown>"`) || !strings.Contains(string(local.Output), `"input_schema"`) {
		t.Fatalf("search mode answer %s", local.Output)
	}
}

// TestRegistryWideCodeMode: a top-level discovery: code makes plain
// /mcp, /schemas and /runs a code view over every tool the client may
// use.
func TestRegistryWideCodeMode(t *testing.T) {
	reg, err := registry.Parse("r.yaml", []byte("discovery: code\n"+src), nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := vserver.Build(reg).For(nil, "")
	if err != nil || v == nil || !v.Code || v.Search {
		t.Fatalf("registry-wide view %+v, %v", v, err)
	}
	if got := names(v.Tools(nil)); !reflect.DeepEqual(got, []string{"search_tools", "execute_code"}) {
		t.Fatalf("tools %v", got)
	}
	call := toolrouter.Call{ToolName: "gh/list_issues"}
	if tool, _, ok := v.Resolve(nil, &call); !ok || tool.Name != "gh/list_issues" {
		t.Fatalf("a program's call of a registry tool: %+v", tool)
	}
}
