package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Keys of the clients of vserverRegistry.
const (
	supportKey = "support-key-0123456789"
	opsKey     = "ops-key-0123456789"
	adminKey   = "admin-key-0123456789"
)

// vserverRegistry combines the example HTTP tools, the go-sdk fixture
// (HTTP MCP) and the npm reference server-memory (stdio MCP) into two
// virtual servers: support (full list; renames, descriptions, hidden
// defaulted arguments on HTTP and MCP tools) and ops (search mode).
func vserverRegistry(t *testing.T, toolsAddr, fixtureURL, llmURL string) string {
	t.Helper()
	return exampleRegistry(t, toolsAddr) + fmt.Sprintf(`
mcp_servers:
  - name: fixture
    url: %s
  - name: memory
    command: [%q]
    env: {MEMORY_FILE_PATH: %q}
virtual_servers:
  - name: support
    tools: ["test/echo", "math/add", "fixture/structured", "fixture/test_simple_text", "memory/read_graph"]
    overrides:
      test/echo: {name: ping, description: "Answers with the fixed greeting", defaults: {msg: fixed-greeting}}
      math/add:
        name: add_ten
        description: "Adds ten to a number"
        title: Add ten
        annotations: {readOnlyHint: true, destructiveHint: false}
        defaults: {b: 10}
      fixture/structured: {name: count, description: "Counts to one", hidden: [bad], defaults: {bad: false}}
      fixture/test_simple_text: {name: hello, description: "Says hello in plain text"}
      memory/read_graph: {name: knowledge_graph, description: "Reads the whole knowledge graph"}
  - name: ops
    tools: ["test/context", "test/validator", "fixture/test_image_content", "memory/*", "math/add"]
    discovery: search
    overrides:
      math/add: {name: sum_numbers, description: "Sum two numbers together and return the total"}
      fixture/test_image_content: {name: picture}
    max_output_bytes: 65536
    max_output_tokens: 8000
clients:
  - {name: support-bot, key_env: E2E_SUPPORT_KEY, virtual_servers: [support], models: ["*"]}
  - {name: ops-bot, key_env: E2E_OPS_KEY, virtual_servers: [ops], models: ["*"]}
  - {name: admin, key_env: E2E_ADMIN_KEY, admin: true, tools: ["*"], models: ["*"]}
providers:
  - {name: fake, kind: openai, base_url: %q, model: fake-model}
`, fixtureURL, memoryBin(t), filepath.Join(t.TempDir(), "memory.jsonl"), llmURL)
}

func startVServers(t *testing.T) (*proc, *fakeLLM) {
	t.Helper()
	tools := startTools(t)
	fixture := startFixture(t)
	llm := startFakeLLM(t, "openai")
	rt, _ := startRouter(t, vserverRegistry(t, tools.addr, "http://"+fixture.addr+"/mcp", llm.baseURL),
		"E2E_SUPPORT_KEY="+supportKey, "E2E_OPS_KEY="+opsKey, "E2E_ADMIN_KEY="+adminKey)
	// The MCP servers' tools join when they are discovered.
	waitSchemas(t, rt, "support", "count", "hello", "knowledge_graph")
	return rt, llm
}

// schemaNames lists the names GET /schemas/openai?server= gives a client.
func schemaNames(t *testing.T, rt *proc, key, server string) []string {
	t.Helper()
	u := rt.URL() + "/schemas/openai"
	if server != "" {
		u += "?server=" + server
	}
	r := do(t, "GET", u, nil, "Authorization", "Bearer "+key)
	if r.Status != 200 {
		t.Fatalf("GET %s: %d %s", u, r.Status, r.Body)
	}
	var body struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range body.Tools {
		out = append(out, tl.Name)
	}
	sort.Strings(out)
	return out
}

func waitSchemas(t *testing.T, rt *proc, server string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		have := schemaNames(t, rt, adminKey, server)
		missing := slices.DeleteFunc(slices.Clone(want), func(w string) bool { return slices.Contains(have, w) })
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("virtual server %s: %v not listed; have %v\n%s", server, missing, have, rt.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tsClient is what e2e/testdata/mcp-client.mjs printed.
type tsClient struct {
	Protocol string `json:"protocol"`
	Session  string `json:"session"`
	Error    string `json:"error"`
	Tools    []struct {
		Name        string         `json:"name"`
		Title       string         `json:"title"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"inputSchema"`
		Annotations map[string]any `json:"annotations"`
	} `json:"tools"`
	Results []struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
		Meta              map[string]any `json:"_meta"`
		Error             string         `json:"error"`
	} `json:"results"`
}

// runTSClient runs the TypeScript SDK client against url.
func runTSClient(t *testing.T, url, key string, calls ...map[string]any) tsClient {
	t.Helper()
	sdk := filepath.Join(filepath.Dir(filepath.Dir(everythingBin(t))), "@modelcontextprotocol", "sdk")
	raw, _ := json.Marshal(calls)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "testdata/mcp-client.mjs", url, key, string(raw))
	cmd.Env = append(os.Environ(), "MCP_SDK_DIR="+sdk)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("TypeScript client: %v\n%s\n%s", err, out, stderr.String())
	}
	var res tsClient
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("TypeScript client output: %v\n%s", err, out)
	}
	if res.Error != "" {
		t.Fatalf("TypeScript client: %s", res.Error)
	}
	return res
}

// TestVirtualServersMCP: a real MCP client (the TypeScript SDK, protocol
// 2025-11-25, and the go-sdk at 2026-07-28) lists and calls through
// /mcp/{name} and sees only the curated view: exported names,
// descriptions, titles, annotations, schemas without hidden or defaulted
// arguments, and calls that reach the real tools with the defaults filled
// in.
func TestVirtualServersMCP(t *testing.T) {
	t.Parallel()
	rt, _ := startVServers(t)
	res := runTSClient(t, rt.URL()+"/mcp/support", supportKey,
		map[string]any{"name": "ping", "arguments": map[string]any{"msg": "overridden?"}},
		map[string]any{"name": "add_ten", "arguments": map[string]any{"a": 5}},
		map[string]any{"name": "count", "arguments": map[string]any{"bad": true}},
		map[string]any{"name": "hello"},
		map[string]any{"name": "knowledge_graph"},
		map[string]any{"name": "test/echo", "arguments": map[string]any{"msg": "real name"}},
		map[string]any{"name": "sum_numbers", "arguments": map[string]any{"a": 1, "b": 2}},
	)
	if res.Protocol != "2025-11-25" || res.Session == "" {
		t.Errorf("protocol %q session %q", res.Protocol, res.Session)
	}
	var listed []string
	for _, tl := range res.Tools {
		listed = append(listed, tl.Name)
	}
	sort.Strings(listed)
	if want := []string{"add_ten", "count", "hello", "knowledge_graph", "ping"}; !slices.Equal(listed, want) {
		t.Fatalf("tools/list on /mcp/support: %v, want %v", listed, want)
	}
	for _, tl := range res.Tools {
		props, _ := tl.InputSchema["properties"].(map[string]any)
		switch tl.Name {
		case "add_ten":
			if tl.Description != "Adds ten to a number" || tl.Title != "Add ten" || tl.Annotations["readOnlyHint"] != true || tl.Annotations["destructiveHint"] != false {
				t.Errorf("add_ten: %+v", tl)
			}
			if _, ok := props["b"]; ok || props["a"] == nil || !slices.Equal(toStrings(tl.InputSchema["required"]), []string{"a"}) {
				t.Errorf("add_ten schema %v", tl.InputSchema)
			}
		case "count":
			if _, ok := props["bad"]; ok || tl.Description != "Counts to one" {
				t.Errorf("count: hidden argument listed: %+v", tl)
			}
		case "ping":
			if _, ok := props["msg"]; ok {
				t.Errorf("ping: defaulted argument listed: %v", tl.InputSchema)
			}
		}
	}
	text := func(i int) string {
		var b strings.Builder
		for _, c := range res.Results[i].Content {
			b.WriteString(c.Text)
		}
		return b.String()
	}
	if r := res.Results[0]; r.IsError || r.StructuredContent["msg"] != "fixed-greeting" {
		t.Errorf("ping: the default is not what the tool got: %+v", r)
	}
	if r := res.Results[1]; r.IsError || r.StructuredContent["sum"] != 15.0 || r.Meta["toolrouter/tool_name"] != "math/add" {
		t.Errorf("add_ten(5): %+v", r)
	}
	if r := res.Results[2]; r.IsError || r.StructuredContent["n"] != 1.0 {
		t.Errorf("count with a hidden argument sent: %+v %s", r, text(2))
	}
	if r := res.Results[3]; r.IsError || !strings.Contains(text(3), "simple text response") {
		t.Errorf("hello: %+v", r)
	}
	if r := res.Results[4]; r.IsError || !strings.Contains(text(4), "entities") {
		t.Errorf("knowledge_graph: %+v %s", r, text(4))
	}
	// The real name, and another server's exported name, are unknown here.
	for i := 5; i <= 6; i++ {
		if r := res.Results[i]; !r.IsError || !strings.Contains(text(i), "not found") {
			t.Errorf("call %d reached a tool outside the view: %+v %s", i, r, text(i))
		}
	}

	// The same view at 2026-07-28 (stateless), with the go-sdk client.
	cs := connectMCP(t, rt.URL()+"/mcp/support", supportKey, "")
	got := mcpTools(t, cs)
	if len(got) != 5 || got["add_ten"] == nil || got["test/echo"] != nil {
		t.Fatalf("2026-07-28 tools/list: %v", keys(got))
	}
	if r := mcpCall(t, cs, "add_ten", map[string]any{"a": 1}); r.IsError || !strings.Contains(mcpText(r), "11") {
		t.Errorf("2026-07-28 add_ten: %s", mcpText(r))
	}

	// Search mode over MCP: the two meta-tools, search then call.
	ops := runTSClient(t, rt.URL()+"/mcp/ops", opsKey,
		map[string]any{"name": "search_tools", "arguments": map[string]any{"query": "add up two numbers", "limit": 3}},
		map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "sum_numbers", "arguments": map[string]any{"a": 2, "b": 3}}},
		map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "add_ten", "arguments": map[string]any{"a": 2}}},
	)
	if len(ops.Tools) != 2 || ops.Tools[0].Name != "call_tool" || ops.Tools[1].Name != "search_tools" || ops.Tools[1].Annotations["readOnlyHint"] != true {
		t.Fatalf("/mcp/ops lists %+v", ops.Tools)
	}
	var found struct {
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
	}
	if r := ops.Results[0]; r.IsError || json.Unmarshal([]byte(r.Content[0].Text), &found) != nil || len(found.Tools) == 0 || found.Tools[0].Name != "sum_numbers" {
		t.Fatalf("search_tools: %+v", r)
	}
	if r := ops.Results[1]; r.IsError || r.StructuredContent["sum"] != 5.0 {
		t.Errorf("call_tool sum_numbers: %+v", r)
	}
	if r := ops.Results[2]; !r.IsError {
		t.Errorf("call_tool reached support's add_ten from ops: %+v", r)
	}

	// Audit records name the real tool (and the name as sent).
	a := do(t, "GET", rt.URL()+"/audit?client=support-bot&tool=math/add", nil, "Authorization", "Bearer "+adminKey).JSON(t)
	recs, _ := a["records"].([]any)
	if len(recs) < 2 {
		t.Fatalf("audit of math/add by support-bot: %v", a)
	}
	if rec := recs[len(recs)-1].(map[string]any); rec["tool"] != "math/add" || rec["tool_name"] != "add_ten" || rec["entry_point"] != "mcp" {
		t.Errorf("audit record %v", rec)
	}
	b := do(t, "GET", rt.URL()+"/audit?client=ops-bot&tool=math/add", nil, "Authorization", "Bearer "+adminKey).JSON(t)
	if recs, _ := b["records"].([]any); len(recs) != 1 || recs[0].(map[string]any)["tool_name"] != "sum_numbers" {
		t.Errorf("audit of call_tool: %v", b)
	}
}

// TestVirtualServerIsolation: a client bound to one virtual server
// reaches no other tool by any name — real name, provider alias, another
// server's exported name — on any endpoint.
func TestVirtualServerIsolation(t *testing.T) {
	t.Parallel()
	rt, _ := startVServers(t)
	auth := []string{"Authorization", "Bearer " + supportKey}
	route := func(query, name string, args map[string]any) map[string]any {
		t.Helper()
		r := do(t, "POST", rt.URL()+"/route"+query, map[string]any{"plan_id": "iso", "tool_call": map[string]any{"name": name, "arguments": args}}, auth...)
		if r.Status != 200 {
			t.Fatalf("POST /route%s %s: %d %s", query, name, r.Status, r.Body)
		}
		return r.JSON(t)
	}
	// Within its server: the exported name routes to the real tool.
	if res := route("?server=support", "add_ten", map[string]any{"a": 1}); res["success"] != true || res["tool_name"] != "math/add" {
		t.Fatalf("support add_ten: %v", res)
	}
	if res := route("?server=support", toolrouter.ExportName(toolrouter.FormatOpenAI, "knowledge_graph"), nil); res["success"] != true {
		t.Fatalf("support knowledge_graph: %v", res)
	}
	for _, c := range []struct{ query, name string }{
		{"?server=support", "math/add"}, // the real name of its own tool
		{"?server=support", toolrouter.ExportName(toolrouter.FormatOpenAI, "math/add")}, // its alias
		{"?server=support", "sum_numbers"},                                              // ops' exported name
		{"?server=support", "search_tools"},                                             // ops' meta-tool
		{"?server=support", "test/context"},                                             // a tool of ops only
		{"", "math/add"},                                                                // no server: nothing
		{"", "add_ten"},
		{"", toolrouter.ExportName(toolrouter.FormatOpenAI, "test/echo")},
	} {
		if res := route(c.query, c.name, map[string]any{"a": 1, "b": 2}); res["success"] != false || res["error_category"] != "not_found" {
			t.Errorf("POST /route%s %s: %v", c.query, c.name, res)
		}
	}
	// Another server is unknown to it, on every endpoint.
	if r := do(t, "POST", rt.URL()+"/route?server=ops", map[string]any{"plan_id": "iso", "tool_call": map[string]any{"name": "sum_numbers", "arguments": map[string]any{}}}, auth...); r.Status != 404 || !strings.Contains(string(r.Body), `server`) {
		t.Errorf("POST /route?server=ops: %d %s", r.Status, r.Body)
	}
	if r := do(t, "POST", rt.URL()+"/route/batch?server=ops", map[string]any{"plan_id": "iso", "tool_calls": []any{}}, auth...); r.Status != 404 {
		t.Errorf("POST /route/batch?server=ops: %d %s", r.Status, r.Body)
	}
	if r := do(t, "GET", rt.URL()+"/schemas/openai?server=ops", nil, auth...); r.Status != 404 {
		t.Errorf("GET /schemas?server=ops: %d %s", r.Status, r.Body)
	}
	if r := do(t, "POST", rt.URL()+"/mcp/ops", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, append(auth, "Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list")...); r.Status != 404 {
		t.Errorf("POST /mcp/ops: %d %s", r.Status, r.Body)
	}
	if r := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "x", "server": "ops"}, auth...); r.Status != 400 || !strings.Contains(string(r.Body), "server") {
		t.Errorf("POST /runs server ops: %d %s", r.Status, r.Body)
	}
	if got := schemaNames(t, rt, supportKey, ""); len(got) != 0 {
		t.Errorf("GET /schemas without server: %v", got)
	}
	if got := schemaNames(t, rt, supportKey, "support"); !slices.Equal(got, []string{"add_ten", "count", "hello", "knowledge_graph", "ping"}) {
		t.Errorf("GET /schemas?server=support: %v", got)
	}
	// Plain /mcp lists nothing and calls nothing.
	cs := connectMCP(t, rt.URL()+"/mcp", supportKey, "2025-11-25")
	if got := mcpTools(t, cs); len(got) != 0 {
		t.Errorf("plain /mcp lists %v", keys(got))
	}
	for _, name := range []string{"math/add", toolrouter.ExportName(toolrouter.FormatMCP, "math/add"), "add_ten"} {
		if r := mcpCall(t, cs, name, map[string]any{"a": 1, "b": 2}); !r.IsError {
			t.Errorf("plain /mcp called %s: %s", name, mcpText(r))
		}
	}
}

// TestVirtualServerSearchRun: a /runs loop against the fake LLM finds a
// tool with search_tools and calls it with call_tool (search_mode: call),
// then, with search_mode: inject, calls the found tool directly from the
// tools the loop injected into the next turn.
func TestVirtualServerSearchRun(t *testing.T) {
	t.Parallel()
	rt, llm := startVServers(t)
	auth := []string{"Authorization", "Bearer " + opsKey}
	llm.script(t,
		map[string]any{"tool_calls": []any{toolCall("search_tools", map[string]any{"query": "sum two numbers", "limit": 2})}},
		map[string]any{"tool_calls": []any{toolCall("call_tool", map[string]any{"name": "sum_numbers", "arguments": map[string]any{"a": 20, "b": 22}})}},
		map[string]any{"text": "the total is 42"},
	)
	r := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "what is 20 + 22?", "server": "ops", "context": map[string]any{"plan_id": "search-run"}}, auth...)
	if r.Status != 200 {
		t.Fatalf("POST /runs: %d %s", r.Status, r.Body)
	}
	run := r.JSON(t)
	calls, _ := run["tool_calls"].([]any)
	if run["status"] != "completed" || len(calls) != 2 {
		t.Fatalf("run %v", run)
	}
	search, call := calls[0].(map[string]any), calls[1].(map[string]any)
	if search["tool_name"] != "search_tools" || search["success"] != true || !strings.Contains(fmt.Sprint(search["output"]), "sum_numbers") {
		t.Errorf("search_tools record %v", search)
	}
	if call["tool_name"] != "math/add" || call["success"] != true || fmt.Sprint(call["output"]) != "map[sum:42]" {
		t.Errorf("call_tool record %v", call)
	}
	reqs := llm.requests(t)
	if len(reqs) != 3 {
		t.Fatalf("the model was asked %d times", len(reqs))
	}
	if got := offered(reqs[0]); !slices.Equal(got, []string{"search_tools", "call_tool"}) {
		t.Errorf("tools offered in search mode: %v", got)
	}
	if got := offered(reqs[2]); !slices.Equal(got, []string{"search_tools", "call_tool"}) {
		t.Errorf("search_mode call offered %v on the last turn", got)
	}

	// inject: the found tool's definition joins the next turn's tools and
	// the model calls it by its exported name.
	llm.script(t,
		map[string]any{"tool_calls": []any{toolCall("search_tools", map[string]any{"query": "sum numbers total", "limit": 1})}},
		map[string]any{"tool_calls": []any{toolCall("sum_numbers", map[string]any{"a": 1, "b": 2})}},
		map[string]any{"text": "3"},
	)
	r = do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "1 + 2?", "server": "ops", "search_mode": "inject"}, auth...)
	run = r.JSON(t)
	calls, _ = run["tool_calls"].([]any)
	if run["status"] != "completed" || len(calls) != 2 || calls[1].(map[string]any)["tool_name"] != "math/add" || calls[1].(map[string]any)["success"] != true {
		t.Fatalf("inject run %v", run)
	}
	reqs = llm.requests(t)[3:]
	if got := offered(reqs[1]); !slices.Equal(got, []string{"search_tools", "call_tool", "sum_numbers"}) {
		t.Errorf("tools offered after the search: %v", got)
	}
	// The injected definition is the view's: its description.
	if fn := toolDefs(reqs[1])[2]; fn["description"] != "Sum two numbers together and return the total" {
		t.Errorf("injected definition %v", fn)
	}
	// A call of a tool outside the view by its real name fails.
	llm.script(t,
		map[string]any{"tool_calls": []any{toolCall("test/echo", map[string]any{"msg": "x"})}},
		map[string]any{"text": "done"},
	)
	run = do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "echo", "server": "ops"}, auth...).JSON(t)
	if calls, _ := run["tool_calls"].([]any); len(calls) != 1 || calls[0].(map[string]any)["error_category"] != "not_found" {
		t.Errorf("run called a tool outside its view: %v", run)
	}
}

// offered lists the tool names of an OpenAI Chat Completions request.
func offered(body map[string]any) []string {
	var out []string
	for _, fn := range toolDefs(body) {
		out = append(out, fmt.Sprint(fn["name"]))
	}
	return out
}

func toolDefs(body map[string]any) []map[string]any {
	var out []map[string]any
	tools, _ := body["tools"].([]any)
	for _, tl := range tools {
		fn, _ := tl.(map[string]any)["function"].(map[string]any)
		out = append(out, fn)
	}
	return out
}

// connectMCP opens an MCP session (version "" is the go-sdk's default,
// 2026-07-28, stateless) with a bearer key.
func connectMCP(t *testing.T, url, key, version string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{key, http.DefaultTransport}}, MaxRetries: -1}, opts)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func toStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestRegistryWideSearch: discovery: search for the whole registry turns
// plain /mcp, /schemas and /route into search mode (search_tools and
// call_tool over every tool the client may use, real names still
// routing), scoped per client; a reload back to full lists the tools
// again, and a reload with a bad virtual server is rejected.
func TestRegistryWideSearch(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	llm := startFakeLLM(t, "openai")
	base := exampleRegistry(t, tools.addr) + `
providers:
  - {name: fake, kind: openai, base_url: "` + llm.baseURL + `", model: fake-model, search_mode: inject}
clients:
  - {name: maths, key_env: E2E_MATHS_KEY, tools: ["math/*"], models: ["*"]}
  - {name: admin, key_env: E2E_ADMIN_KEY, admin: true, tools: ["*"], models: ["*"]}
`
	rt, path := startRouter(t, base+"discovery: search\n", "E2E_MATHS_KEY=maths-key-0123456789", "E2E_ADMIN_KEY="+adminKey)
	maths := "maths-key-0123456789"
	if got := schemaNames(t, rt, maths, ""); !slices.Equal(got, []string{"call_tool", "search_tools"}) {
		t.Fatalf("GET /schemas in search mode: %v", got)
	}
	cs := connectMCP(t, rt.URL()+"/mcp", maths, "2025-11-25")
	if got := keys(mcpTools(t, cs)); !slices.Equal(got, []string{"call_tool", "search_tools"}) {
		t.Fatalf("plain /mcp in search mode lists %v", got)
	}
	// The search finds only the client's tools.
	r := mcpCall(t, cs, "search_tools", map[string]any{"query": "echo add numbers validator", "limit": 10})
	var found struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if r.IsError || json.Unmarshal([]byte(mcpText(r)), &found) != nil || len(found.Tools) != 1 || found.Tools[0].Name != "math/add" {
		t.Fatalf("search_tools for a math/* client: %s", mcpText(r))
	}
	if r := mcpCall(t, cs, "call_tool", map[string]any{"name": "math/add", "arguments": map[string]any{"a": 1, "b": 1}}); r.IsError || !strings.Contains(mcpText(r), `"sum":2`) {
		t.Errorf("call_tool math/add: %s", mcpText(r))
	}
	if r := mcpCall(t, cs, "call_tool", map[string]any{"name": "test/echo", "arguments": map[string]any{}}); !r.IsError {
		t.Errorf("call_tool reached a tool outside the client's scope: %s", mcpText(r))
	}
	// /route: the meta-tools and the real names (a direct call after a search).
	res := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "p", "tool_call": map[string]any{"name": toolrouter.ExportName(toolrouter.FormatOpenAI, "math/add"), "arguments": map[string]any{"a": 2, "b": 2}}},
		"Authorization", "Bearer "+maths).JSON(t)
	if res["success"] != true || res["tool_name"] != "math/add" {
		t.Errorf("direct call in search mode: %v", res)
	}

	// /runs without a server: the meta-tools, and (the provider's
	// search_mode: inject) the found tool offered next.
	llm.script(t,
		map[string]any{"tool_calls": []any{toolCall("search_tools", map[string]any{"query": "add"})}},
		map[string]any{"text": "found it"},
	)
	run := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "add"}, "Authorization", "Bearer "+maths).JSON(t)
	if run["status"] != "completed" {
		t.Fatalf("run %v", run)
	}
	reqs := llm.requests(t)
	if len(reqs) != 2 || !slices.Equal(offered(reqs[0]), []string{"search_tools", "call_tool"}) ||
		!slices.Equal(offered(reqs[1]), []string{"search_tools", "call_tool", toolrouter.ExportName(toolrouter.FormatOpenAI, "math/add")}) {
		t.Fatalf("offered %v then %v", offered(reqs[0]), offered(reqs[len(reqs)-1]))
	}

	// Reloads: a bad virtual server is rejected with the field named; back
	// to full, the tools are listed again.
	rt.reload(t, path, base+"virtual_servers:\n  - {name: v, tools: [\"math/*\"], overrides: {math/add: {defaults: {a: seven}}}}\n")
	rt.waitOutput(t, "rejected reload", contains(`overrides.math/add.defaults: do not satisfy the input schema of tool \"math/add\"`))
	if got := schemaNames(t, rt, maths, ""); !slices.Equal(got, []string{"call_tool", "search_tools"}) {
		t.Fatalf("after a rejected reload: %v", got)
	}
	rt.reload(t, path, base+"virtual_servers:\n  - {name: v, tools: [\"math/*\"], overrides: {math/add: {name: plus, defaults: {a: 7}}}}\n")
	if got := schemaNames(t, rt, maths, ""); !slices.Equal(got, []string{"math/add"}) {
		t.Fatalf("after a reload to full: %v", got)
	}
	if got := schemaNames(t, rt, maths, "v"); !slices.Equal(got, []string{"plus"}) {
		t.Fatalf("the reloaded virtual server: %v", got)
	}
	if r := mcpCall(t, connectMCP(t, rt.URL()+"/mcp/v", maths, ""), "plus", map[string]any{"b": 1}); r.IsError || !strings.Contains(mcpText(r), `"sum":8`) {
		t.Errorf("plus(b=1) with a=7: %s", mcpText(r))
	}
	// A session of /mcp/v hears of a reload that changes its view.
	changed := make(chan struct{}, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: rt.URL() + "/mcp/v", HTTPClient: &http.Client{Transport: bearer{maths, http.DefaultTransport}}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if got := keys(mcpTools(t, sess)); !slices.Equal(got, []string{"plus"}) {
		t.Fatalf("/mcp/v lists %v", got)
	}
	// The client opens its GET stream (where notifications come) on its
	// own time after connecting: each attempt is a reload that changes
	// the view, until one is announced.
	name := ""
	for i := 0; name == ""; i++ {
		n := fmt.Sprintf("add_seven_%d", i)
		rt.reload(t, path, base+"virtual_servers:\n  - {name: v, tools: [\"math/*\"], overrides: {math/add: {name: "+n+", defaults: {a: 7}}}}\n")
		select {
		case <-changed:
			name = n
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			t.Fatal("no notifications/tools/list_changed on /mcp/v after a reload")
		}
	}
	if got := keys(mcpTools(t, sess)); !slices.Equal(got, []string{name}) {
		t.Fatalf("/mcp/v lists %v after the reload, want %s", got, name)
	}
}

// TestCheckVirtualServers: `toolrouterd check` lists every problem of the
// virtual servers, each naming its field, and passes a good file.
func TestCheckVirtualServers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	head := `tools:
  - name: gh/create_issue
    endpoint: http://x/ci
    input_schema: {type: object, required: [repo], properties: {repo: {type: string}, labels: {type: array}}}
  - {name: gh/list, endpoint: http://x/l}
mcp_servers:
  - {name: files, url: http://x/mcp}
virtual_servers:
  - name: support
    tools: ["gh/*", "files/*"]
`
	check := func(content string) (string, error) {
		p := filepath.Join(dir, "r.yaml")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(binDir+"/toolrouterd", "check", p).CombinedOutput()
		return string(out), err
	}
	out, err := check(head + `    overrides:
      gh/nope: {name: x}
      gh/create_issue: {name: same, defaults: {repo: 7}, hidden: [labels, colour]}
      gh/list: {name: same}
clients:
  - {name: bot, key_sha256: "` + strings.Repeat("d", 64) + `", virtual_servers: [support, other], models: ["*"]}
`)
	if err == nil {
		t.Fatalf("check passed a bad file:\n%s", out)
	}
	for _, want := range []string{
		`r.yaml:12: virtual server "support": overrides.gh/nope: names no tool of the registry`,
		`r.yaml:13: virtual server "support": overrides.gh/create_issue.defaults: do not satisfy the input schema of tool "gh/create_issue"`,
		`r.yaml:13: virtual server "support": overrides.gh/create_issue.hidden[1]: tool "gh/create_issue" has no argument "colour"`,
		`r.yaml:14: virtual server "support": overrides.gh/list.name: exported name "same" is also that of tool "gh/create_issue"`,
		`r.yaml:16: client "bot": virtual_servers[1]: no virtual server named "other" (defined: support)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	if out, err := check(head + "    overrides:\n      gh/create_issue: {name: file_bug, defaults: {repo: acme/app}, hidden: [labels]}\n      files/read: {name: read}\n"); err != nil {
		t.Fatalf("check refused a good file: %v\n%s", err, out)
	}
}

// TestRunActorContextKeepsAViewsFixedArguments: a run on a virtual server
// that fixes sandbox_root (a hidden default) cannot move the tool out of
// its sandbox with its actor context's sandbox_root.
func TestRunActorContextKeepsAViewsFixedArguments(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	fake := startFakeLLM(t, "openai")
	reg := strings.Replace(runsRegistry(t, tools.addr, fake), "tools:\n", fmt.Sprintf(`tools:
  - name: box/context
    endpoint: http://%s/context
    input_schema: {type: object, properties: {path: {type: string}, sandbox_root: {type: string}}}
`, tools.addr), 1) + `
virtual_servers:
  - name: sandboxed
    tools: ["box/context"]
    overrides:
      box/context: {name: read_file, defaults: {sandbox_root: /srv/tenant-a}}
`
	rt, _ := startRouter(t, reg)
	fake.script(t, map[string]any{"tool_calls": []any{toolCall("read_file", map[string]any{"path": "a.txt", "sandbox_root": "/etc"})}}, map[string]any{"text": "ok"})
	run := decodeRun(t, do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "p", "server": "sandboxed",
		"context": map[string]any{"plan_id": "plan-box", "sandbox_root": "/"}}))
	if len(run.ToolCalls) != 1 || !run.ToolCalls[0].Success {
		t.Fatalf("tool call failed: %+v", run.ToolCalls)
	}
	out, _ := run.ToolCalls[0].Output.(map[string]any)
	if args, _ := out["arguments"].(map[string]any); args["sandbox_root"] != "/srv/tenant-a" || args["path"] != "a.txt" {
		t.Errorf("the tool received %v, want sandbox_root /srv/tenant-a", out["arguments"])
	}
}
