package registry_test

import (
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

func TestParseCosts(t *testing.T) {
	t.Parallel()
	src := head + `    cost: {per_call: 0.002}
mcp_servers:
  - name: gh
    url: http://mcp.example/mcp
    cost: {per_call: 0.01, currency: EUR}
    tool_costs:
      search_code: {per_call: 0}
providers:
  - {name: p, kind: openai, model: gpt-4o, prices: {input: 2.5, output: 10, cached_input: 1.25}}
  - {name: q, kind: openai, model: gpt-4o}
clients:
  - {name: a, key_sha256: "` + strings.Repeat("a", 64) + `", tools: ["*"], spend_limit: {per_day: 20, per_month: 300}}
virtual_servers:
  - {name: v, tools: ["*"], spend_limit: {per_month: 0.5, currency: EUR}}
`
	r, err := registry.Parse("r.yaml", []byte(src), env())
	if err != nil {
		t.Fatal(err)
	}
	tool, _ := r.Lookup("t")
	if tool.Price != (toolrouter.Price{PerCall: 2000, Currency: "USD"}) {
		t.Errorf("tool price %+v", tool.Price)
	}
	s := r.MCPServers()[0]
	if s.Price != (toolrouter.Price{PerCall: 10000, Currency: "EUR"}) || s.ToolPrices["search_code"] != (toolrouter.Price{Currency: "USD"}) {
		t.Errorf("server prices %+v %+v", s.Price, s.ToolPrices)
	}
	if p, _ := r.Provider("p"); p.Prices.Input != 2500000 || p.Prices.Output != 10000000 || !p.Prices.HasCached || p.Prices.CachedInput != 1250000 {
		t.Errorf("provider prices %+v", p.Prices)
	}
	if p, _ := r.Provider("q"); p.Prices.Priced() {
		t.Errorf("provider without prices %+v", p.Prices)
	}
	if l := r.ClientSpendLimit("a"); l != (toolrouter.SpendLimit{PerDay: 20000000, HasDay: true, PerMonth: 300000000, HasMonth: true, Currency: "USD"}) {
		t.Errorf("client limit %+v", l)
	}
	if l := r.VirtualServerSpendLimit("v"); l != (toolrouter.SpendLimit{PerMonth: 500000, HasMonth: true, Currency: "EUR"}) {
		t.Errorf("server limit %+v", l)
	}
}

// TestParseCostProblems: check names the field of a bad price or limit.
func TestParseCostProblems(t *testing.T) {
	t.Parallel()
	client := "clients:\n  - name: a\n    jwt_subject: a\n"
	for _, tt := range []struct{ name, src, want string }{
		{"too many decimals", head + "    cost: {per_call: 0.0000001}\n", `r.yaml:4: tool "t": cost.per_call: must be an amount of at most 6 decimals between 0 and 1000000000000`},
		{"negative", head + "    cost: {per_call: -1}\n", `r.yaml:4: tool "t": cost.per_call: must be an amount between 0 and 1000000000000 (at most 6 decimals)`},
		{"no per_call", head + "    cost: {currency: USD}\n", `r.yaml:4: tool "t": cost.per_call: required`},
		{"bad currency", head + "    cost: {per_call: 1, currency: dollars}\n", `r.yaml:4: tool "t": cost.currency: must be an ISO 4217 currency code such as USD, got "dollars"`},
		{"day over month", client + "    spend_limit: {per_day: 20, per_month: 10}\n", `r.yaml:4: client "a": spend_limit.per_day: must not be more than per_month (10)`},
		{"empty limit", client + "    spend_limit: {}\n", `r.yaml:4: client "a": spend_limit: must be a mapping like {per_day: 20, per_month: 300}`},
		{"limit not a number", client + "    spend_limit: {per_day: lots}\n", `r.yaml:4: client "a": spend_limit.per_day: must be a number`},
		{"prices without output", "providers:\n  - {name: p, kind: openai, model: m, prices: {input: 1}}\n", `r.yaml:2: providers[0].prices.output: required`},
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
