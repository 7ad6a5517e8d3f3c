package registry

import (
	"reflect"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestWithToolsKeepsEverySection: the registry with discovered MCP tools
// has every section of the file's registry, not only its tools (it once
// lost the guardrails: no guardrail ran once an MCP server's tools were
// discovered). A field added to Registry fails here until the file below
// sets it and WithTools carries it.
func TestWithToolsKeepsEverySection(t *testing.T) {
	file, err := Parse("r.yaml", []byte(`
discovery: search
tools:
  - {name: plain, endpoint: http://tools.example/plain}
providers:
  - {name: local, kind: ollama, model: m}
default_provider: local
mcp_servers:
  - {name: srv, url: "http://127.0.0.1:3001/mcp"}
clients:
  - {name: a, key_sha256: 0000000000000000000000000000000000000000000000000000000000000000, tools: ["*"]}
virtual_servers:
  - {name: v, tools: ["*"]}
guardrails:
  - {name: g, builtin: redact_secrets}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := file.WithTools([]*toolrouter.Tool{{Name: "srv/x", Kind: toolrouter.KindTool, MCPServer: "srv", MCPTool: "x",
		InputSchema: map[string]any{"type": "object"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tools()) != 2 {
		t.Fatalf("tools = %d, want the file's and the discovered one", len(got.Tools()))
	}
	want := reflect.ValueOf(file).Elem()
	have := reflect.ValueOf(got).Elem()
	for i := range want.NumField() {
		name := want.Type().Field(i).Name
		if name == "tools" || name == "byName" || name == "quarantined" { // WithTools' own
			continue
		}
		if want.Field(i).IsZero() {
			t.Errorf("the test's registry leaves %s unset: set it so that WithTools is seen to keep it", name)
		}
	}
	a, b := *file, *got
	a.tools, a.byName, a.quarantined, b.tools, b.byName, b.quarantined = nil, nil, nil, nil, nil, nil
	if !reflect.DeepEqual(a, b) {
		for i := range want.NumField() {
			if n := want.Type().Field(i).Name; n != "tools" && n != "byName" && n != "quarantined" && have.Field(i).IsZero() {
				t.Errorf("WithTools lost %s", n)
			}
		}
		t.Error("WithTools changed a section other than tools")
	}
}

// TestWithToolsQuarantined: a quarantined discovered tool is found by name
// and listed by Quarantined, never by Tools (views refuse it by name, as
// quarantined, rather than "not found").
func TestWithToolsQuarantined(t *testing.T) {
	q := &toolrouter.Tool{Name: "srv/q", Kind: toolrouter.KindTool, MCPServer: "srv", MCPTool: "q",
		InputSchema: map[string]any{"type": "object"}, Quarantine: "definition not reviewed"}
	ok := &toolrouter.Tool{Name: "srv/ok", Kind: toolrouter.KindTool, MCPServer: "srv", MCPTool: "ok",
		InputSchema: map[string]any{"type": "object"}}
	got, err := Empty().WithTools([]*toolrouter.Tool{q, ok})
	if err != nil {
		t.Fatal(err)
	}
	if tools := got.Tools(); len(tools) != 1 || tools[0] != ok {
		t.Errorf("Tools() = %v, want srv/ok only", tools)
	}
	if qs := got.Quarantined(); len(qs) != 1 || qs[0] != q {
		t.Errorf("Quarantined() = %v, want srv/q", qs)
	}
	if found, _ := got.Lookup("srv/q"); found != q {
		t.Errorf("Lookup(srv/q) = %v", found)
	}
}
