package mcpclient

import (
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// A tool served under its pinned definition (on_change: keep_old) keeps
// what the registry sets on it: its output budget, circuit and timeout
// (issue 32 item 12: a 50 KB output came back whole under a 1,024-byte
// budget once its server changed the tool's definition).
func TestRedefineKeepsTheRegistrysSettings(t *testing.T) {
	t.Parallel()
	cfg := toolrouter.MCPServer{Name: "docs", Prefix: "docs/", Timeout: 7 * time.Second,
		Circuit: toolrouter.Circuit{Failures: 3, Cooldown: time.Minute},
		Budget:  toolrouter.OutputBudget{Bytes: 4096}, ToolBudgets: map[string]toolrouter.OutputBudget{"fetch": {Bytes: 1024, Keep: []string{"$.title"}}}}
	now := registryTool(cfg, newDiscovered(&mcp.Tool{Name: "fetch", Description: "new", InputSchema: map[string]any{"type": "object"}}))
	old, err := Redefine(now, []byte(`{"name":"fetch","description":"old","inputSchema":{"type":"object"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if old.Description != "old" {
		t.Fatalf("description %q: not the pinned definition", old.Description)
	}
	if old.Budget.Bytes != 1024 || len(old.Budget.Keep) != 1 || old.Circuit != cfg.Circuit || old.Timeout != cfg.Timeout || old.Name != "docs/fetch" {
		t.Fatalf("redefined tool lost the registry's settings: budget %+v circuit %+v timeout %v name %q", old.Budget, old.Circuit, old.Timeout, old.Name)
	}
}
