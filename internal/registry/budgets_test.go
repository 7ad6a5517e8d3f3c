package registry_test

import (
	"slices"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/registry"
)

func TestParseOutputBudgets(t *testing.T) {
	t.Parallel()
	src := head + `    max_output_bytes: 16384
    max_output_tokens: 4000
    keep: ["$.items[0:20]", "$.total"]
mcp_servers:
  - name: gh
    url: http://mcp.example/mcp
    max_output_bytes: 65536
    tool_budgets:
      search_code: {max_output_tokens: 2000, keep: ["$.items[0:5]"]}
providers:
  - {name: p, kind: openai, model: gpt-4o, context_window: 8192}
`
	r, err := registry.Parse("r.yaml", []byte(src), env())
	if err != nil {
		t.Fatal(err)
	}
	tool, _ := r.Lookup("t")
	if b := tool.Budget; b.Bytes != 16384 || b.Tokens != 4000 || !slices.Equal(b.Keep, []string{"$.items[0:20]", "$.total"}) {
		t.Errorf("tool budget %+v", b)
	}
	s := r.MCPServers()[0]
	if s.Budget.Bytes != 65536 || s.ToolBudgets["search_code"].Tokens != 2000 || s.ToolBudgets["search_code"].Keep[0] != "$.items[0:5]" {
		t.Errorf("server budgets %+v %+v", s.Budget, s.ToolBudgets)
	}
	if p, _ := r.Provider("p"); p.ContextWindow != 8192 {
		t.Errorf("context_window %d", p.ContextWindow)
	}
}

func TestParseOutputBudgetProblems(t *testing.T) {
	t.Parallel()
	srv := "mcp_servers:\n  - name: gh\n    url: http://mcp.example/mcp\n"
	for _, tt := range []struct{ name, src, want string }{
		{"bytes too small", head + "    max_output_bytes: 10\n", `r.yaml:4: tool "t": max_output_bytes: must be at least 256`},
		{"bytes not an integer", head + "    max_output_bytes: lots\n", `r.yaml:4: tool "t": max_output_bytes: must be an integer`},
		{"tokens zero", head + "    max_output_tokens: 0\n", `r.yaml:4: tool "t": max_output_tokens: must be at least 1`},
		{"keep not JSONPath", head + "    max_output_bytes: 1024\n    keep: [\"items[0:20]\"]\n", `r.yaml:5: tool "t": keep[0]: not a JSONPath query (RFC 9535): jsonpath: unexpected identifier at position 1`},
		{"keep without a budget", head + "    keep: [\"$.a\"]\n", `r.yaml:4: tool "t": keep: needs max_output_bytes or max_output_tokens`},
		{"tool_budgets not a mapping", srv + "    tool_budgets: [a]\n", `r.yaml:4: mcp_servers[0].tool_budgets: must be a mapping of the server's tool names to budgets`},
		{"tool_budgets unknown key", srv + "    tool_budgets: {x: {max_bytes: 1}}\n", `r.yaml:4: mcp_servers[0].tool_budgets.x.max_bytes: unknown key`},
		{"context_window too small", "providers:\n  - {name: p, kind: openai, model: m, context_window: 100}\n", `r.yaml:2: providers[0].context_window: must be at least 1024`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := registry.Parse("r.yaml", []byte(tt.src), env())
			if err == nil {
				t.Fatalf("Parse succeeded, want %s", tt.want)
			}
			if got := problems(t, err).Error(); got != tt.want {
				t.Errorf("problems:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}
