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
		if name == "tools" || name == "byName" {
			continue
		}
		if want.Field(i).IsZero() {
			t.Errorf("the test's registry leaves %s unset: set it so that WithTools is seen to keep it", name)
		}
	}
	a, b := *file, *got
	a.tools, a.byName, b.tools, b.byName = nil, nil, nil, nil
	if !reflect.DeepEqual(a, b) {
		for i := range want.NumField() {
			if n := want.Type().Field(i).Name; n != "tools" && n != "byName" && have.Field(i).IsZero() {
				t.Errorf("WithTools lost %s", n)
			}
		}
		t.Error("WithTools changed a section other than tools")
	}
}
