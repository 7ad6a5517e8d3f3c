package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// TestDeploymentsQueryExportedMetrics: the alert rules are valid (what
// promtool check rules checks), and every metric the rules and the Grafana
// dashboard query is one the running service exports.
func TestDeploymentsQueryExportedMetrics(t *testing.T) {
	groups, errs := rulefmt.ParseFile("../deployments/prometheus/alerts.yaml", false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("alerts.yaml: %v", errs)
	}
	exprs := map[string]string{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			exprs["alert "+r.Alert] = r.Expr
		}
	}
	raw, err := os.ReadFile("../deployments/grafana/toolrouterd.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("toolrouterd.json: %v", err)
	}
	for _, p := range dash.Panels {
		for i, tg := range p.Targets {
			exprs[fmt.Sprintf("panel %q #%d", p.Title, i)] = strings.NewReplacer("$__rate_interval", "5m", "$__range", "1h").Replace(tg.Expr)
		}
	}
	queried := map[string]string{} // metric → where
	for where, e := range exprs {
		ast, err := parser.NewParser(parser.Options{}).ParseExpr(e)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				queried[vs.Name] = where
			}
			return nil
		})
	}
	if len(queried) < 8 {
		t.Fatalf("only %d metrics queried: %v", len(queried), queried)
	}

	// Traffic: an MCP server, a routed call, a run, a readiness check.
	srv := mcp.NewServer(&mcp.Implementation{Name: "m", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "noop", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	ms := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ms.Close)
	tools := startTools(t)
	fake := startFakeLLM(t, "openai")
	rt, _ := startRouter(t, runsRegistry(t, tools.addr, fake)+fmt.Sprintf("mcp_servers:\n  - name: m\n    url: %s\n", ms.URL))
	do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "m", "tool_call": map[string]any{"name": "test/echo", "arguments": map[string]any{"msg": "x"}}})
	fake.script(t, map[string]any{"text": "done"})
	do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "hi"})
	do(t, "GET", rt.URL()+"/readyz", nil)

	resp, err := http.Get(rt.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	exported := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		exported[line[:strings.IndexAny(line, "{ ")]] = true
	}
	for name, where := range queried {
		if !exported[name] {
			t.Errorf("%s queries %s, which /metrics does not export", where, name)
		}
	}
}
