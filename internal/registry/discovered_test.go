package registry_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

func mcpTool(name string) *toolrouter.Tool {
	return &toolrouter.Tool{Name: name, Kind: toolrouter.KindTool, MCPServer: "srv", MCPTool: name,
		InputSchema: map[string]any{"type": "object"}}
}

func TestWithMCPTools(t *testing.T) {
	t.Parallel()
	file := parse(t, `
tools:
  - name: files/read
    endpoint: http://tools.example/read
  - name: plain
    endpoint: http://tools.example/plain
providers:
  - {name: local, kind: ollama, model: m}
mcp_servers:
  - {name: files, url: "http://127.0.0.1:3001/mcp"}
`, nil)
	extra := []*toolrouter.Tool{
		mcpTool("files/list"),
		mcpTool("files/read"), // a file tool's name
		mcpTool("files_read"), // not the alias: the alias carries a hash
		mcpTool(toolrouter.ExportName(toolrouter.FormatOpenAI, "plain/x")),
		mcpTool("files/list"), // a duplicate among the extra tools
		mcpTool("bad name"),   // not a valid name
		mcpTool(toolrouter.ExportName(toolrouter.FormatOpenAI, "files/read")), // a file tool's alias
		nil,
	}
	r, err := file.WithTools(extra)
	if r == nil {
		t.Fatal("WithTools returned no registry")
	}
	if err == nil {
		t.Fatal("no error for the colliding tools")
	}
	msg := err.Error()
	for _, want := range []string{`"files/read" left out`, `"files/list" left out`, `"bad name" left out`,
		`"` + toolrouter.ExportName(toolrouter.FormatOpenAI, "files/read") + `" left out: its name is an alias of tool "files/read"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if got := len(strings.Split(msg, "\n")); got != 4 {
		t.Errorf("%d tools reported, want 4:\n%s", got, msg)
	}

	var names []string
	for _, tool := range r.Tools() {
		names = append(names, tool.Name)
	}
	want := "files/read plain files/list files_read " + toolrouter.ExportName(toolrouter.FormatOpenAI, "plain/x")
	if strings.Join(names, " ") != want {
		t.Errorf("tools = %v, want %s", names, want)
	}
	if tool, _ := r.Lookup("files/read"); tool == nil || tool.MCPServer != "" {
		t.Error("the file tool lost its name to an MCP tool")
	}
	list, ok := r.Lookup("files/list")
	if !ok || list.MCPServer != "srv" {
		t.Fatal("files/list not found")
	}
	for _, f := range []toolrouter.Format{toolrouter.FormatOpenAI, toolrouter.FormatGemini, toolrouter.FormatMCP} {
		if got, _ := r.Lookup(toolrouter.ExportName(f, "files/list")); got != list {
			t.Errorf("files/list not found under its %s alias", f)
		}
	}
	// Providers and MCP servers carry over; the file's registry is unchanged.
	if _, ok := r.Provider("local"); !ok || len(r.MCPServers()) != 1 {
		t.Error("providers or MCP servers lost")
	}
	if _, ok := file.Lookup("files/list"); ok || len(file.Tools()) != 2 {
		t.Error("WithTools modified its receiver")
	}

	if r2, err := file.WithTools(nil); err != nil || len(r2.Tools()) != 2 {
		t.Errorf("WithTools(nil) = %d tools, %v", len(r2.Tools()), err)
	}
}

func TestHolderSetExtraMCPToolsSurviveReload(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.yaml")
	writeFile(t, path, oneTool("first"))
	h := registry.NewHolder(path, nil, load(t, path, nil))

	if err := h.SetExtra([]*toolrouter.Tool{mcpTool("srv/a"), mcpTool("first")}); err == nil || !strings.Contains(err.Error(), `"first"`) {
		t.Errorf("SetExtra collision = %v", err)
	}
	cur := h.Current()
	if _, ok := cur.Lookup("srv/a"); !ok {
		t.Fatal("extra tool not in force")
	}
	if tool, _ := cur.Lookup("first"); tool.MCPServer != "" {
		t.Error("the MCP tool replaced the file tool")
	}

	// A reload keeps the extra tools; a failed one keeps everything.
	writeFile(t, path, oneTool("second"))
	if err := h.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Current().Lookup("srv/a"); !ok {
		t.Error("a reload dropped the extra tools")
	}
	if _, ok := h.Current().Lookup("second"); !ok {
		t.Error("the reload was not applied")
	}
	writeFile(t, path, "tools: [oops\n")
	before := h.Current()
	if err := h.Reload(); err == nil || h.Current() != before {
		t.Error("a bad file changed the registry")
	}

	// With no extra tools the file's registry itself is in force.
	writeFile(t, path, oneTool("third"))
	if err := h.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := h.SetExtra(nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Current().Lookup("srv/a"); ok || len(h.Current().Tools()) != 1 {
		t.Error("SetExtra(nil) kept the extra tools")
	}
}
