package registry_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

func load(t *testing.T, path string, getenv func(string) string) *registry.Registry {
	t.Helper()
	r, err := registry.Load(path, getenv)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return r
}

func parse(t *testing.T, src string, getenv func(string) string) *registry.Registry {
	t.Helper()
	r, err := registry.Parse("r.yaml", []byte(src), getenv)
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	return r
}

var validEnv = env("ECHO_TOKEN", "s3cret", "FILES_TOKEN", "f-token")

func TestLoadValid(t *testing.T) {
	t.Parallel()
	r := load(t, "testdata/valid.yaml", validEnv)

	var names []string
	for _, tool := range r.Tools() {
		names = append(names, tool.Name)
	}
	if want := []string{"test/echo", "check.lint", "plain"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("tools = %v, want %v (file order)", names, want)
	}

	echo := r.Tools()[0]
	if echo.Description != "Echo tool" || echo.Endpoint != "http://127.0.0.1:9001/echo" || echo.Kind != toolrouter.KindTool {
		t.Errorf("echo = %+v", echo)
	}
	if echo.Timeout != 10*time.Second || !echo.Idempotent || echo.Retries != 2 {
		t.Errorf("echo timeout/idempotent/retries = %v/%v/%v", echo.Timeout, echo.Idempotent, echo.Retries)
	}
	wantHeaders := map[string]string{"Authorization": "Bearer s3cret", "X-Static": "plain"}
	if !reflect.DeepEqual(echo.Headers, wantHeaders) {
		t.Errorf("echo headers = %v, want %v", echo.Headers, wantHeaders)
	}
	if echo.ValidateArgs == nil {
		t.Error("echo has no ValidateArgs")
	}

	lint := r.Tools()[1]
	if lint.Kind != toolrouter.KindValidation || lint.ValidationMode() != "strict" {
		t.Errorf("lint kind %q mode %q", lint.Kind, lint.ValidationMode())
	}

	// Defaults.
	plain := r.Tools()[2]
	if plain.Kind != toolrouter.KindTool || plain.Timeout != 30*time.Second || plain.Idempotent || plain.Retries != 0 {
		t.Errorf("plain defaults = %+v", plain)
	}
	if want := map[string]any{"type": "object"}; !reflect.DeepEqual(plain.InputSchema, want) {
		t.Errorf("default input schema = %v, want %v", plain.InputSchema, want)
	}
	if plain.OutputSchema != nil || plain.Headers != nil {
		t.Errorf("plain output schema %v headers %v, want none", plain.OutputSchema, plain.Headers)
	}
	if plain.ValidateArgs == nil {
		t.Fatal("a tool with the default schema has no ValidateArgs")
	}
	if err := plain.ValidateArgs(map[string]any{"anything": 1.0}); err != nil {
		t.Errorf("default schema rejects an object: %v", err)
	}

	wantProviders := []toolrouter.Provider{
		{Name: "local", Kind: "openai", BaseURL: "http://127.0.0.1:11434/v1", Model: "qwen2.5:7b", APIKeyEnv: "OPENAI_API_KEY"},
		{Name: "claude", Kind: "anthropic", BaseURL: "https://api.anthropic.com", Model: "claude-sonnet-4-5"},
	}
	if got := r.Providers(); !reflect.DeepEqual(got, wantProviders) {
		t.Errorf("providers =\n%+v\nwant\n%+v", got, wantProviders)
	}
	if got := r.DefaultProvider(); got != "claude" {
		t.Errorf("DefaultProvider() = %q, want claude", got)
	}
	if p, ok := r.Provider("local"); !ok || p.Model != "qwen2.5:7b" {
		t.Errorf("Provider(local) = %+v, %v", p, ok)
	}
	if _, ok := r.Provider("nope"); ok {
		t.Error("Provider(nope) found")
	}

	wantMCP := []toolrouter.MCPServer{
		{Name: "files", URL: "http://127.0.0.1:3001/mcp", Prefix: "files/", Tools: []string{"*"},
			Headers: map[string]string{"Authorization": "Bearer f-token"}, Timeout: 30 * time.Second},
		{Name: "web", URL: "https://mcp.example.com/mcp", Prefix: "w.", Tools: []string{"fetch", "search"}, Timeout: 5 * time.Second},
	}
	if got := r.MCPServers(); !reflect.DeepEqual(got, wantMCP) {
		t.Errorf("mcp servers =\n%+v\nwant\n%+v", got, wantMCP)
	}
}

func TestAccessorsReturnCopies(t *testing.T) {
	t.Parallel()
	r := load(t, "testdata/valid.yaml", validEnv)
	r.Tools()[0] = nil
	r.Providers()[0].Name = "changed"
	s := r.MCPServers()
	s[0].Tools[0] = "changed"
	s[0].Headers["Authorization"] = "changed"
	if r.Tools()[0] == nil || r.Providers()[0].Name != "local" ||
		r.MCPServers()[0].Tools[0] != "*" || r.MCPServers()[0].Headers["Authorization"] != "Bearer f-token" {
		t.Error("changing what an accessor returned changed the registry")
	}
}

func TestParseEmpty(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"", "\n", "# nothing yet\n", "tools: []\n", "tools:\n", "tools: []\nproviders: []\nmcp_servers: []\n"} {
		r := parse(t, src, nil)
		if len(r.Tools()) != 0 || len(r.Providers()) != 0 || len(r.MCPServers()) != 0 || r.DefaultProvider() != "" {
			t.Errorf("%q: not empty", src)
		}
		if _, ok := r.Lookup("test/echo"); ok {
			t.Errorf("%q: Lookup found a tool", src)
		}
	}
	e := registry.Empty()
	if len(e.Tools()) != 0 || e.DefaultProvider() != "" {
		t.Error("Empty() is not empty")
	}
	if _, ok := e.Lookup("x"); ok {
		t.Error("Empty().Lookup found a tool")
	}
}

func TestDefaultProviderIsFirst(t *testing.T) {
	t.Parallel()
	r := parse(t, "providers:\n  - {name: a, kind: ollama, model: llama3}\n  - {name: b, kind: openai, model: gpt-4o}\n", nil)
	if got := r.DefaultProvider(); got != "a" {
		t.Errorf("DefaultProvider() = %q, want the first provider", got)
	}
	if p, _ := r.Provider("a"); p.BaseURL != "http://localhost:11434" {
		t.Errorf("ollama default base_url = %q", p.BaseURL)
	}
	if p, _ := r.Provider("b"); p.BaseURL != "https://api.openai.com/v1" {
		t.Errorf("openai default base_url = %q", p.BaseURL)
	}
}

func TestNewProviderKinds(t *testing.T) {
	r := parse(t, `providers:
  - {name: r, kind: openai-responses, model: gpt-5-mini, api_key_env: OPENAI_API_KEY}
  - {name: g, kind: gemini, model: gemini-2.5-flash, api_key_env: GEMINI_API_KEY}
  - {name: b, kind: bedrock, model: anthropic.claude-3-5-haiku-20241022-v1:0, region: eu-west-1}
`, nil)
	want := map[string]toolrouter.Provider{
		"r": {Name: "r", Kind: "openai-responses", BaseURL: "https://api.openai.com/v1", Model: "gpt-5-mini", APIKeyEnv: "OPENAI_API_KEY"},
		"g": {Name: "g", Kind: "gemini", BaseURL: "https://generativelanguage.googleapis.com", Model: "gemini-2.5-flash", APIKeyEnv: "GEMINI_API_KEY"},
		"b": {Name: "b", Kind: "bedrock", Model: "anthropic.claude-3-5-haiku-20241022-v1:0", Region: "eu-west-1"},
	}
	for name, w := range want {
		if p, ok := r.Provider(name); !ok || p != w {
			t.Errorf("Provider(%s) = %+v, want %+v", name, p, w)
		}
	}
}

func TestLookupByAlias(t *testing.T) {
	t.Parallel()
	r := load(t, "testdata/valid.yaml", validEnv)
	echo, ok := r.Lookup("test/echo")
	if !ok || echo.Name != "test/echo" {
		t.Fatalf("Lookup(test/echo) = %v, %v", echo, ok)
	}
	for _, f := range []toolrouter.Format{toolrouter.FormatOpenAI, toolrouter.FormatAnthropic, toolrouter.FormatBedrock, toolrouter.FormatGemini, toolrouter.FormatMCP} {
		alias := toolrouter.ExportName(f, "test/echo")
		got, ok := r.Lookup(alias)
		if !ok || got != echo {
			t.Errorf("Lookup(%s alias %q) = %v, %v; want test/echo", f, alias, got, ok)
		}
	}
	if alias := toolrouter.ExportName(toolrouter.FormatOpenAI, "test/echo"); alias == "test/echo" || !strings.HasPrefix(alias, "test_echo_") {
		t.Fatalf("unexpected openai alias %q: the test no longer tests aliases", alias)
	}
	// check.lint: the strict rule rejects '.', gemini and MCP accept it.
	lint, _ := r.Lookup("check.lint")
	if got, ok := r.Lookup(toolrouter.ExportName(toolrouter.FormatOpenAI, "check.lint")); !ok || got != lint {
		t.Errorf("check.lint not found by its openai alias")
	}
	for _, name := range []string{"test_echo", "TEST/ECHO", "test/echo ", "", "files/read"} {
		if _, ok := r.Lookup(name); ok {
			t.Errorf("Lookup(%q) found a tool", name)
		}
	}
}

func TestInputSchemaIsJSON(t *testing.T) {
	t.Parallel()
	src := head + `    input_schema:
      type: object
      properties:
        n: {type: integer, minimum: 1, maximum: 0x10, default: 3}
        f: {type: number, multipleOf: 0.5}
        b: {type: boolean, default: true}
        e: {enum: [a, 1, null, 2.5]}
        when: {type: string, default: 2024-01-02}
      required: [n]
`
	r := parse(t, src, nil)
	tool, _ := r.Lookup("t")
	var want map[string]any
	if err := json.Unmarshal([]byte(`{"type":"object","properties":{
		"n":{"type":"integer","minimum":1,"maximum":16,"default":3},
		"f":{"type":"number","multipleOf":0.5},
		"b":{"type":"boolean","default":true},
		"e":{"enum":["a",1,null,2.5]},
		"when":{"type":"string","default":"2024-01-02"}},
		"required":["n"]}`), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tool.InputSchema, want) {
		t.Errorf("InputSchema =\n%#v\nwant (as encoding/json decodes it)\n%#v", tool.InputSchema, want)
	}
	if _, err := json.Marshal(tool.InputSchema); err != nil {
		t.Errorf("InputSchema does not marshal: %v", err)
	}
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	t.Parallel()
	src := `tools:
  - name: a
    endpoint: http://tools.example/a
    headers: &h
      X-Team: core
    input_schema: &s
      type: object
      properties: {msg: {type: string}}
  - <<: &common
      endpoint: http://tools.example/common
      timeout: 5s
    name: b
    headers: *h
    input_schema: *s
  - <<: *common
    name: c
    timeout: 7s
`
	r := parse(t, src, nil)
	b, _ := r.Lookup("b")
	c, _ := r.Lookup("c")
	if b.Endpoint != "http://tools.example/common" || b.Timeout != 5*time.Second || b.Headers["X-Team"] != "core" {
		t.Errorf("b = %+v", b)
	}
	if c.Endpoint != "http://tools.example/common" || c.Timeout != 7*time.Second {
		t.Errorf("c = %+v (an explicit key must win over a merged one)", c)
	}
	if err := b.ValidateArgs(map[string]any{"msg": 1.0}); err == nil {
		t.Error("b's aliased schema accepts a number for msg")
	}
}

func TestSelfReferentialAliasIsBounded(t *testing.T) {
	t.Parallel()
	src := head + "    input_schema: &s\n      type: object\n      properties:\n        x: *s\n"
	_, err := registry.Parse("r.yaml", []byte(src), nil)
	if err == nil {
		t.Fatal("a schema that contains itself was accepted")
	}
	if !strings.Contains(err.Error(), "too deeply nested or aliased") {
		t.Errorf("error = %v", err)
	}
}

func TestHeaderExpansion(t *testing.T) {
	t.Parallel()
	src := head + `    headers:
      Authorization: Bearer ${TOKEN}
      X-Both: ${A}-${B}
      X-Literal: cost $5, $HOME stays
`
	r := parse(t, src, env("TOKEN", "tok", "A", "1", "B", "2", "HOME", "/root"))
	tool, _ := r.Lookup("t")
	want := map[string]string{"Authorization": "Bearer tok", "X-Both": "1-2", "X-Literal": "cost $5, $HOME stays"}
	if !reflect.DeepEqual(tool.Headers, want) {
		t.Errorf("headers = %v, want %v", tool.Headers, want)
	}
}

func TestValidateArgs(t *testing.T) {
	t.Parallel()
	src := head + `    input_schema:
      type: object
      properties:
        msg: {type: string}
        count: {type: integer, maximum: 10000}
        tags:
          type: array
          items: {type: string}
        opts:
          type: object
          properties:
            mode: {enum: [fast, slow]}
          additionalProperties: false
      required: [msg]
`
	r := parse(t, src, nil)
	tool, _ := r.Lookup("t")
	tests := []struct {
		name string
		args string // JSON, decoded as the router decodes it
		want string // "" for valid
	}{
		{"valid", `{"msg": "hi", "count": 3, "tags": ["a"], "opts": {"mode": "fast"}}`, ""},
		{"wrong type", `{"msg": 5}`, "schema validation failed: /msg: got number, want string"},
		{"missing required", `{}`, "schema validation failed: missing property 'msg'"},
		{"nested array item", `{"msg": "hi", "tags": ["a", "b", 3]}`, "schema validation failed: /tags/2: got number, want string"},
		{"integer", `{"msg": "hi", "count": 1.5}`, "schema validation failed: /count: got number, want integer"},
		{"maximum printed plainly", `{"msg": "hi", "count": 123456}`, "schema validation failed: /count: maximum: got 123456, want 10000"},
		{"nested object", `{"msg": "hi", "opts": {"mode": "medium", "x": 1}}`,
			"schema validation failed: /opts: unexpected property 'x'; /opts/mode: value must be one of 'fast', 'slow'"},
		{"unexpected properties sorted", `{"msg": "hi", "opts": {"z": 1, "y": 2, "x": 3}}`,
			"schema validation failed: /opts: unexpected properties 'x', 'y', 'z'"},
		{"array indexes in numeric order", `{"msg": "hi", "tags": ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", 10, 2]}`,
			"schema validation failed: /tags/10: got number, want string; /tags/11: got number, want string"},
		{"several", `{"count": "x", "tags": [1]}`,
			"schema validation failed: missing property 'msg'; /count: got string, want integer; /tags/0: got number, want string"},
		{"capped", `{"msg": 1, "count": "x", "tags": [1, 2, 3, 4, 5]}`,
			"schema validation failed: /count: got string, want integer; /msg: got number, want string; /tags/0: got number, want string; /tags/1: got number, want string; /tags/2: got number, want string; and 2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 20 { // the library visits properties in map order
				var args map[string]any
				if err := json.Unmarshal([]byte(tt.args), &args); err != nil {
					t.Fatal(err)
				}
				err := tool.ValidateArgs(args)
				switch {
				case tt.want == "" && err != nil:
					t.Fatalf("valid arguments rejected: %v", err)
				case tt.want != "" && err == nil:
					t.Fatalf("accepted, want %q", tt.want)
				case tt.want != "" && err.Error() != tt.want:
					t.Fatalf("error\n got %q\nwant %q", err.Error(), tt.want)
				}
				if err != nil {
					if strings.Contains(err.Error(), "\n") {
						t.Fatalf("error spans lines: %q", err.Error())
					}
					if got := toolrouter.ClassifyError(err.Error()); got != toolrouter.CategorySchema {
						t.Fatalf("ClassifyError(%q) = %s, want schema", err.Error(), got)
					}
				}
			}
		})
	}
	if err := tool.ValidateArgs(nil); err == nil || err.Error() != "schema validation failed: missing property 'msg'" {
		t.Errorf("ValidateArgs(nil) = %v; want nil treated as {}", err)
	}
}

func TestValidateArgsConcurrent(t *testing.T) {
	t.Parallel()
	r := load(t, "testdata/valid.yaml", validEnv)
	echo, _ := r.Lookup("test/echo")
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				good := map[string]any{"msg": "hi", "count": float64(i%10 + 1)}
				if err := echo.ValidateArgs(good); err != nil {
					t.Errorf("valid args rejected: %v", err)
					return
				}
				if err := echo.ValidateArgs(map[string]any{"msg": float64(i)}); err == nil {
					t.Error("invalid args accepted")
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestToolApproval(t *testing.T) {
	t.Parallel()
	r := parse(t, "tools:\n  - name: billing/refund\n    endpoint: http://tools.example/r\n    approval: required\n"+
		"  - name: plain\n    endpoint: http://tools.example/p\n    approval: none\n", nil)
	if tl := r.Tools(); !tl[0].Approval || tl[1].Approval {
		t.Fatalf("approval = %v, %v; want true, false", tl[0].Approval, tl[1].Approval)
	}
}

func TestToolTask(t *testing.T) {
	t.Parallel()
	r := parse(t, "tools:\n  - name: build\n    endpoint: http://tools.example/b\n    task: required\n"+
		"  - name: report\n    endpoint: http://tools.example/r\n    task: optional\n"+
		"  - name: quick\n    endpoint: http://tools.example/q\n    task: forbidden\n"+
		"  - name: plain\n    endpoint: http://tools.example/p\n", nil)
	tl := r.Tools()
	if tl[0].Task != toolrouter.TaskRequired || tl[1].Task != toolrouter.TaskOptional || tl[2].Task != toolrouter.TaskForbidden || tl[3].Task != toolrouter.TaskUnset {
		t.Fatalf("task = %q, %q, %q, %q", tl[0].Task, tl[1].Task, tl[2].Task, tl[3].Task)
	}
	m := parse(t, "mcp_servers:\n  - name: ci\n    url: http://mcp.example/mcp\n    task: optional\n", nil)
	if got := m.MCPServers(); len(got) != 1 || got[0].Task != toolrouter.TaskOptional {
		t.Fatalf("mcp_servers[].task = %+v", got)
	}
	if _, err := registry.Parse("r.yaml", []byte("tools:\n  - name: x\n    endpoint: http://tools.example/x\n    task: sometimes\n"), nil); err == nil || !strings.Contains(err.Error(), "task") {
		t.Fatalf("task: sometimes was accepted (err %v)", err)
	}
}

func TestStdioMCPServer(t *testing.T) {
	t.Parallel()
	src := `mcp_servers:
  - name: memory
    command: [npx, -y, "@modelcontextprotocol/server-memory"]
    env:
      MEMORY_FILE_PATH: ${DATA}/memory.json
      LITERAL: $HOME
    cwd: /srv
`
	r := parse(t, src, env("DATA", "/var/lib/tr", "HOME", "/root"))
	got := r.MCPServers()
	if len(got) != 1 {
		t.Fatalf("servers = %+v", got)
	}
	s := got[0]
	if s.URL != "" || !reflect.DeepEqual(s.Command, []string{"npx", "-y", "@modelcontextprotocol/server-memory"}) || s.Dir != "/srv" || s.Prefix != "memory/" {
		t.Errorf("server = %+v", s)
	}
	if want := map[string]string{"MEMORY_FILE_PATH": "/var/lib/tr/memory.json", "LITERAL": "$HOME"}; !reflect.DeepEqual(s.Env, want) {
		t.Errorf("env = %v, want %v", s.Env, want)
	}
}

// TestParsePinning: pin defaults to true; pin: false, pin_new and
// on_change are read (docs/trusting-tools.md "Pinned definitions").
func TestParsePinning(t *testing.T) {
	r := parse(t, `mcp_servers:
  - {name: a, url: http://mcp.example/a}
  - {name: b, url: http://mcp.example/b, pin: false}
  - {name: c, url: http://mcp.example/c, pin: true, pin_new: allow, on_change: keep_old}
`, nil)
	got := r.MCPServers()
	if got[0].Unpinned || got[0].PinNew != "" || got[0].OnChange != "" || !got[1].Unpinned ||
		got[2].Unpinned || got[2].PinNew != "allow" || got[2].OnChange != "keep_old" {
		t.Fatalf("pinning of the servers: %+v", got)
	}
}

// TestCircuitSettings: circuit: {failures, cooldown} on a tool and on an
// MCP server; what is left out takes the global defaults, failures: 0
// turns the breaker off.
func TestCircuitSettings(t *testing.T) {
	src := "tools:\n  - name: a\n    endpoint: http://h/a\n    circuit: {failures: 2, cooldown: 5s}\n" +
		"  - name: b\n    endpoint: http://h/b\n    circuit: {failures: 0}\n  - name: c\n    endpoint: http://h/c\n" +
		"mcp_servers:\n  - name: m\n    url: http://h/mcp\n    circuit: {cooldown: 1m}\n"
	reg, err := registry.Parse("r.yaml", []byte(src), env())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]toolrouter.Circuit{"a": {Failures: 2, Cooldown: 5 * time.Second}, "b": {Off: true}, "c": {}}
	for name, c := range want {
		if tool, _ := reg.Lookup(name); tool == nil || tool.Circuit != c {
			t.Errorf("tool %s circuit = %+v, want %+v", name, tool, c)
		}
	}
	if got := reg.MCPServers(); len(got) != 1 || got[0].Circuit != (toolrouter.Circuit{Cooldown: time.Minute}) {
		t.Errorf("MCP server circuit = %+v", got)
	}
}
