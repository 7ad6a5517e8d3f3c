package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
)

// costTools serves the HTTP tools /priced and /free and an MCP server
// (/mcp) whose lookup answers plainly and metered reports its own cost
// in _meta.
func costTools(t *testing.T) *httptest.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "ml", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup", Description: "Looks up"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "metered", Description: "Reports its cost"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "metered"}},
			Meta: mcp.Meta{"toolrouter/cost": map[string]any{"amount": 0.0123, "currency": "USD"}}}, nil, nil
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	for _, p := range []string{"/priced", "/free"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ok":true}`))
		})
	}
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// costRun is the part of GET /runs/{id} about cost.
type costRun struct {
	RunID            string  `json:"run_id"`
	Status           string  `json:"status"`
	TerminatedReason *string `json:"terminated_reason"`
	Cost             []struct {
		Amount   json.Number `json:"amount"`
		Currency string      `json:"currency"`
	} `json:"cost"`
	Unpriced int `json:"unpriced"`
	Turns    []struct {
		Iteration int          `json:"iteration"`
		Model     string       `json:"model"`
		Cost      costAmount   `json:"cost"`
		Tools     []costAmount `json:"tools"`
	} `json:"turns"`
	ToolCalls []struct {
		ToolCallID string      `json:"tool_call_id"`
		ToolName   string      `json:"tool_name"`
		Cost       *costAmount `json:"cost"`
	} `json:"tool_calls"`
}

type costAmount struct {
	Amount   json.Number `json:"amount"`
	Currency string      `json:"currency"`
	Unpriced bool        `json:"unpriced"`
	Source   string      `json:"source"`
}

// costMicros reads an exact decimal amount into micro-units.
func costMicros(t *testing.T, n json.Number) int64 {
	t.Helper()
	whole, frac, _ := strings.Cut(n.String(), ".")
	frac += strings.Repeat("0", 6-len(frac))
	w, err1 := strconv.ParseInt(whole, 10, 64)
	f, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil || len(frac) > 6 {
		t.Fatalf("amount %q is not a decimal of at most 6 places", n)
	}
	return w*1_000_000 + f
}

// costUsage is GET /usage's rows as "key currency amount calls unpriced"
// lines.
func costUsage(t *testing.T, rt *proc, query string, authz []string) []string {
	t.Helper()
	r := do(t, "GET", rt.URL()+"/usage?"+query, nil, authz...)
	if r.Status != 200 {
		t.Fatalf("/usage?%s: %d %s", query, r.Status, r.Body)
	}
	var page struct {
		Rows []struct {
			Key           string      `json:"key"`
			Currency      string      `json:"currency"`
			Amount        json.Number `json:"amount"`
			Calls         int         `json:"calls"`
			UnpricedCalls int         `json:"unpriced_calls"`
		} `json:"rows"`
	}
	dec := json.NewDecoder(strings.NewReader(string(r.Body)))
	dec.UseNumber()
	if err := dec.Decode(&page); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, row := range page.Rows {
		out = append(out, fmt.Sprintf("%s %s %d %d %d", row.Key, row.Currency, costMicros(t, row.Amount), row.Calls, row.UnpricedCalls))
	}
	return out
}

func costDecode(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

// TestCostsAgreeEndToEnd (issue 36): priced HTTP and MCP tools (one
// reporting its own cost), an unpriced tool, and /runs loops on OpenAI
// (default price table) and Anthropic (registry prices) fakes reporting
// usage with cached tokens: the results, GET /audit, GET /runs/{id},
// GET /usage's groupings and the metrics agree to the micro-unit; a
// client over its daily limit gets 429 with Retry-After on /route and
// -32023 on /mcp.
func TestCostsAgreeEndToEnd(t *testing.T) {
	t.Parallel()
	tools := costTools(t)
	oa := startFakeLLM(t, "openai")
	an := startFakeLLM(t, "anthropic")
	reg := fmt.Sprintf(`tools:
  - {name: priced, endpoint: %[1]s/priced, cost: {per_call: 0.002}}
  - {name: free, endpoint: %[1]s/free}
mcp_servers:
  - name: ml
    url: %[1]s/mcp
    prefix: ml_
    cost: {per_call: 0.01}
    tool_costs:
      metered: {per_call: 0.005}
providers:
  - {name: oa, kind: openai, base_url: %[2]s, model: gpt-4o-mini}
  - {name: an, kind: anthropic, base_url: %[3]s, model: claude-test, prices: {input: 3, output: 15, cached_input: 0.3}}
clients:
  - {name: alice, key_env: ALICE_KEY, tools: ["*"], models: ["*"]}
  - {name: tight, key_env: TIGHT_KEY, tools: ["*"], spend_limit: {per_day: 0.003}}
  - {name: admin, key_env: ADMIN_KEY, admin: true, tools: ["*"]}
`, tools.URL, oa.baseURL, an.baseURL)
	rt, _ := startRouter(t, reg, "TOOLROUTER_STORE=sqlite://"+filepath.Join(t.TempDir(), "costs.db"),
		"ALICE_KEY=alice-key", "TIGHT_KEY=tight-key", "ADMIN_KEY=admin-key")
	alice := []string{"Authorization", "Bearer alice-key"}
	admin := []string{"Authorization", "Bearer admin-key"}
	waitFor(t, "ml_metered listed", func() bool { return listsTool(t, rt, "ml_metered", alice...) })
	call := func(name string) map[string]any {
		return map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": name, "arguments": "{}"}}
	}
	costs := map[string]costAmount{} // tool_call_id → the result's cost

	// /route: a priced and an unpriced tool.
	for _, name := range []string{"priced", "free"} {
		r := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "costs", "tool_call": call(name)}, alice...)
		var res struct {
			ToolCallID string      `json:"tool_call_id"`
			Cost       *costAmount `json:"cost"`
		}
		costDecode(t, r.Body, &res)
		if r.Status != 200 || res.Cost == nil {
			t.Fatalf("%s: %d %s", name, r.Status, r.Body)
		}
		costs[res.ToolCallID] = *res.Cost
	}
	// /mcp: a priced tool and one reporting its cost.
	tok := mcpSession(t, rt.URL(), "2025-11-25", alice...)
	for i, name := range []string{"ml_lookup", "ml_metered"} {
		r := mcpPost(t, rt.URL(), tok, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, i+2, name), alice...)
		var m struct {
			Result struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"result"`
		}
		costDecode(t, r.Body, &m)
		var id string
		var c costAmount
		_ = json.Unmarshal(m.Result.Meta["toolrouter/tool_call_id"], &id)
		costDecode(t, m.Result.Meta["toolrouter/cost"], &c)
		costs[id] = c
	}
	// /runs on two provider kinds, each turn reporting 1000 input tokens
	// (200 of them cached) and 100 output tokens.
	usage := map[string]any{"input_tokens": 1000, "output_tokens": 100, "cached_input_tokens": 200}
	var runs []costRun
	for _, tc := range []struct {
		fake     *fakeLLM
		provider string
		tool     string
	}{{oa, "oa", "priced"}, {an, "an", "free"}} {
		tc.fake.script(t,
			map[string]any{"tool_calls": []any{map[string]any{"name": tc.tool, "arguments": map[string]any{}}}, "usage": usage},
			map[string]any{"text": "done", "usage": usage})
		r := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "go", "provider": tc.provider}, alice...)
		var run costRun
		costDecode(t, r.Body, &run)
		if r.Status != 200 || run.Status != "completed" || len(run.Turns) != 2 || len(run.ToolCalls) != 1 || run.ToolCalls[0].Cost == nil {
			t.Fatalf("run on %s: %d %s", tc.provider, r.Status, r.Body)
		}
		got := do(t, "GET", rt.URL()+"/runs/"+run.RunID, nil, alice...)
		var stored costRun
		costDecode(t, got.Body, &stored)
		if len(stored.Turns) != 2 || len(stored.Cost) != len(run.Cost) {
			t.Errorf("GET /runs/%s: %s", run.RunID, got.Body)
		}
		costs[run.ToolCalls[0].ToolCallID] = *run.ToolCalls[0].Cost
		runs = append(runs, stored)
	}

	// What each should cost, in micro-USD: gpt-4o-mini's default prices
	// (0.15 input, 0.075 cached, 0.60 output per million):
	// 800×0.15 + 200×0.075 + 100×0.60 = 195 a turn; the registry's for
	// an (3, 0.3, 15): 800×3 + 200×0.3 + 100×15 = 3960 a turn.
	for i, want := range []struct {
		turn     int64
		total    int64
		unpriced int
	}{{195, 2*195 + 2000, 0}, {3960, 2 * 3960, 1}} {
		run := runs[i]
		for _, turn := range run.Turns {
			if costMicros(t, turn.Cost.Amount) != want.turn || turn.Cost.Source != "model" {
				t.Errorf("run %d turn %d: %+v, want %d", i, turn.Iteration, turn.Cost, want.turn)
			}
		}
		if len(run.Cost) != 1 || costMicros(t, run.Cost[0].Amount) != want.total || run.Unpriced != want.unpriced {
			t.Errorf("run %d totals %+v unpriced %d, want %d and %d", i, run.Cost, run.Unpriced, want.total, want.unpriced)
		}
	}
	// The results: 0.002 for priced, unpriced free, 0.01 for lookup (its
	// server's price), 0.0123 reported by metered (over its 0.005).
	byAmount := map[string]int{}
	for id, c := range costs {
		key := c.Amount.String() + " " + c.Source
		if c.Unpriced {
			key = "unpriced"
		}
		byAmount[key]++
		_ = id
	}
	if want := map[string]int{"0.002 registry": 2, "unpriced": 2, "0.01 registry": 1, "0.0123 reported": 1}; fmt.Sprint(byAmount) != fmt.Sprint(want) {
		t.Errorf("result costs %v, want %v", byAmount, want)
	}
	// The audit trail says the same of each call.
	a := do(t, "GET", rt.URL()+"/audit?client=alice", nil, admin...)
	var trail struct {
		Records []struct {
			ToolCallID string      `json:"tool_call_id"`
			Cost       *costAmount `json:"cost"`
		} `json:"records"`
	}
	costDecode(t, a.Body, &trail)
	seen := 0
	for _, rec := range trail.Records {
		want, ok := costs[rec.ToolCallID]
		if !ok {
			continue
		}
		seen++
		if rec.Cost == nil || rec.Cost.Amount != want.Amount || rec.Cost.Unpriced != want.Unpriced {
			t.Errorf("audit %s: %+v, result %+v", rec.ToolCallID, rec.Cost, want)
		}
	}
	if seen != len(costs) {
		t.Errorf("the audit trail has %d of the %d calls: %s", seen, len(costs), a.Body)
	}
	// GET /usage, by each grouping: 2000+2000 priced, 10000 lookup, 12300
	// metered, 390 and 7920 for the models: 34610 in all.
	for _, tc := range []struct {
		query string
		want  string
	}{
		{"group_by=client", "alice  0 2 2|alice USD 34610 8 0"},
		{"group_by=tool", "free  0 2 2|ml_lookup USD 10000 1 0|ml_metered USD 12300 1 0|priced USD 4000 2 0"},
		{"group_by=model", "an/claude-test USD 7920 2 0|oa/gpt-4o-mini USD 390 2 0"},
		{"group_by=virtual_server", "  0 2 2| USD 34610 8 0"},
	} {
		if got := strings.Join(costUsage(t, rt, tc.query, alice), "|"); got != tc.want {
			t.Errorf("/usage?%s:\n got %s\nwant %s", tc.query, got, tc.want)
		}
	}
	day := costUsage(t, rt, "group_by=day", admin)
	if len(day) != 2 || !strings.HasSuffix(day[1], " USD 34610 8 0") {
		t.Errorf("/usage by day: %q", day)
	}
	// A client sees its own; another's is refused.
	if r := do(t, "GET", rt.URL()+"/usage?client=admin", nil, alice...); r.Status != 403 {
		t.Errorf("alice reading admin's usage: %d", r.Status)
	}
	// The metrics: the same sums (floats, for dashboards).
	for series, want := range map[string]float64{
		`toolrouter_cost_total{client="alice",currency="USD",model="",tool="priced"}`:         0.004,
		`toolrouter_cost_total{client="alice",currency="USD",model="",tool="ml_metered"}`:     0.0123,
		`toolrouter_cost_total{client="alice",currency="USD",model="an/claude-test",tool=""}`: 0.00792,
		`toolrouter_cost_total{client="alice",currency="USD",model="oa/gpt-4o-mini",tool=""}`: 0.00039,
		`toolrouter_unpriced_calls_total{client="alice",model="",tool="free"}`:                2,
	} {
		if got := metric(t, rt, series); fmt.Sprintf("%.6f", got) != fmt.Sprintf("%.6f", want) {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}

	// A client over its daily limit (0.003): the second 0.002 call is
	// refused before it runs, 429 with Retry-After; on /mcp, -32023.
	tight := []string{"Authorization", "Bearer tight-key"}
	if r := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "tight", "tool_call": call("priced")}, tight...); r.Status != 200 {
		t.Fatalf("first call: %d %s", r.Status, r.Body)
	}
	r := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "tight", "tool_call": call("priced")}, tight...)
	ra, _ := strconv.Atoi(r.Header.Get("Retry-After"))
	if r.Status != 429 || ra < 1 || ra > 86400 || !strings.Contains(string(r.Body), `"error_category":"budget"`) {
		t.Errorf("over the limit: %d Retry-After %q %s", r.Status, r.Header.Get("Retry-After"), r.Body)
	}
	ttok := mcpSession(t, rt.URL(), "2025-11-25", tight...)
	m := mcpPost(t, rt.URL(), ttok, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"ml_lookup","arguments":{}}}`, tight...)
	var rpcErr struct {
		Error struct {
			Code int `json:"code"`
			Data struct {
				Category   string `json:"category"`
				RetryAfter int    `json:"retry_after"`
			} `json:"data"`
		} `json:"error"`
	}
	costDecode(t, m.Body, &rpcErr)
	if rpcErr.Error.Code != -32023 || rpcErr.Error.Data.Category != "budget" || rpcErr.Error.Data.RetryAfter < 1 {
		t.Errorf("/mcp over the limit: %s", m.Body)
	}
	if got := strings.Join(costUsage(t, rt, "group_by=client&client=tight", admin), "|"); got != "tight USD 2000 1 0" {
		t.Errorf("tight spent %s, want only its first call", got)
	}
}

// TestCostLimitAcrossReplicas (issue 36): two /runs of one client with a
// 0.01 USD daily limit run at once on two replicas sharing PostgreSQL,
// each turn calling a 0.002 tool: both end budget_exhausted, and the
// client's spend stays within the documented bound — the limit plus one
// model turn (whose cost is known only after it) per run in flight.
func TestCostLimitAcrossReplicas(t *testing.T) {
	t.Parallel()
	tools := costTools(t)
	fake := startFakeLLM(t, "openai")
	reg := fmt.Sprintf(`tools:
  - {name: priced, endpoint: %[1]s/priced, cost: {per_call: 0.002}}
providers:
  - {name: oa, kind: openai, base_url: %[2]s, model: gpt-4o-mini}
clients:
  - {name: capped, key_env: CAPPED_KEY, tools: ["*"], models: ["*"], spend_limit: {per_day: 0.01}}
`, tools.URL, fake.baseURL)
	reps := startReplicas(t, 2, reg, pgtest.Start(t), "CAPPED_KEY=capped-key")
	authz := []string{"Authorization", "Bearer capped-key"}
	usage := map[string]any{"input_tokens": 1000, "output_tokens": 100, "cached_input_tokens": 200} // 195 micro-USD a turn
	var turns []map[string]any
	for range 40 {
		turns = append(turns, map[string]any{"tool_calls": []any{map[string]any{"name": "priced", "arguments": map[string]any{}}}, "usage": usage})
	}
	fake.script(t, turns...)
	var wg sync.WaitGroup
	results := make([]costRun, 2)
	for i, rep := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := do(t, "POST", rep.URL()+"/runs", map[string]any{"prompt": "spend", "max_iterations": 30}, authz...)
			costDecode(t, r.Body, &results[i])
		}()
	}
	wg.Wait()
	for i, run := range results {
		if run.Status != "terminated" || run.TerminatedReason == nil || *run.TerminatedReason != "budget_exhausted" {
			t.Errorf("run %d: %s %v, want terminated budget_exhausted", i, run.Status, run.TerminatedReason)
		}
	}
	rows := costUsage(t, reps[1], "group_by=client", authz)
	if len(rows) != 1 {
		t.Fatalf("usage %q", rows)
	}
	var spent int64
	fmt.Sscanf(strings.Fields(rows[0])[2], "%d", &spent)
	const limit, turn, runsInFlight = 10_000, 195, 2
	if spent > limit+runsInFlight*turn {
		t.Errorf("spent %d micro-USD: over the bound %d (limit %d + one turn per run in flight)", spent, limit+runsInFlight*turn, limit)
	}
	if spent <= limit-2000 {
		t.Errorf("spent %d micro-USD: the limit was never near (a 0.002 call is refused only past %d)", spent, limit-2000)
	}
	t.Logf("spent %d micro-USD against a limit of %d (bound %d)", spent, limit, limit+runsInFlight*turn)
}

// TestConsoleUsage (issue 36): an admin signs in to the console in a
// headless Chromium and opens Usage: today's bar of the chart shows the
// day's spend, the tables by client and by tool list what each spent and
// the unpriced calls; a screenshot is taken (written to
// $E2E_SCREENSHOT_DIR/usage.png too when that is set, to look at).
func TestConsoleUsage(t *testing.T) {
	t.Parallel()
	tools := costTools(t)
	reg := fmt.Sprintf(`tools:
  - {name: search/web, endpoint: %[1]s/priced, cost: {per_call: 0.25}}
  - {name: data/lookup, endpoint: %[1]s/priced, cost: {per_call: 1.5}}
  - {name: free, endpoint: %[1]s/free}
clients:
  - {name: research-agent, key_env: R_KEY, tools: ["*"]}
  - {name: billing-bot, key_env: B_KEY, tools: ["*"]}
  - {name: admin, key_env: ADMIN_KEY, admin: true, tools: ["*"]}
`, tools.URL)
	rt, _ := startRouter(t, reg, "R_KEY=r-key", "B_KEY=b-key", "ADMIN_KEY=admin-key")
	call := func(name string) map[string]any {
		return map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": name, "arguments": "{}"}}
	}
	for key, calls := range map[string][]string{
		"r-key": {"search/web", "search/web", "search/web", "data/lookup", "free"},
		"b-key": {"data/lookup", "data/lookup", "search/web", "free", "free"},
	} {
		for _, name := range calls {
			if r := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "console-usage", "tool_call": call(name)}, "Authorization", "Bearer "+key); r.Status != 200 {
				t.Fatalf("%s: %d %s", name, r.Status, r.Body)
			}
		}
	}
	// research-agent 0.75 + 1.5 = 2.25, billing-bot 3 + 0.25 = 3.25: 5.5 USD
	// today, and 3 unpriced calls.
	ctx := browser(t)
	in(t, ctx, "sign in as the admin and open Usage",
		chromedp.Navigate(rt.URL()+"/ui#usage"),
		chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), "admin-key"),
		chromedp.Click(chromedp.CSS("#signin-form button")),
		chromedp.WaitVisible(chromedp.CSS(`#usage-chart rect.bar[height]:not([height="0"])`)),
		chromedp.WaitVisible(chromedp.CSS(`table[data-usage="tool"]`)))
	if got := text(t, ctx, "#usage-total"); !strings.Contains(got, "Spent 5.50 USD") || !strings.Contains(got, "3 unpriced calls") {
		t.Errorf("total: %q", got)
	}
	chart := text(t, ctx, "#usage-chart")
	if !strings.Contains(chart, "5.50") || !strings.Contains(chart, "Spend per day (USD, UTC)") {
		t.Errorf("the chart's labels: %q", chart)
	}
	clients := text(t, ctx, `table[data-usage="client"]`)
	for _, want := range []string{"billing-bot", "3.25 USD", "research-agent", "2.25 USD"} {
		if !strings.Contains(clients, want) {
			t.Errorf("the client table lacks %q:\n%s", want, clients)
		}
	}
	tools2 := text(t, ctx, `table[data-usage="tool"]`)
	for _, want := range []string{"data/lookup", "4.50 USD", "search/web", "1.00 USD", "free"} {
		if !strings.Contains(tools2, want) {
			t.Errorf("the tool table lacks %q:\n%s", want, tools2)
		}
	}
	screenshot(t, ctx, "usage.png", false)
	if dir := os.Getenv("E2E_SCREENSHOT_DIR"); dir != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "usage.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckCostFields: toolrouter check names the field of each bad price
// and spend limit (issue 36).
func TestCheckCostFields(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "registry.yaml")
	src := `tools:
  - {name: a, endpoint: http://x/a, cost: {per_call: 0.0000001}}
  - {name: b, endpoint: http://x/b, cost: {per_call: 1, currency: dollars}}
mcp_servers:
  - {name: m, url: http://x/mcp, tool_costs: {t: {currency: USD}}}
providers:
  - {name: p, kind: openai, model: gpt-4o, prices: {input: -1, output: 10}}
clients:
  - {name: k, jwt_subject: k, spend_limit: {per_day: 20, per_month: 10}}
virtual_servers:
  - {name: v, tools: ["*"], spend_limit: {per_week: 5}}
`
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(binDir, "toolrouterd"), "check", file).CombinedOutput()
	if err == nil {
		t.Fatalf("check passed:\n%s", out)
	}
	for _, want := range []string{
		`tool "a": cost.per_call: must be an amount of at most 6 decimals`,
		`tool "b": cost.currency: must be an ISO 4217 currency code such as USD, got "dollars"`,
		`mcp_servers[0].tool_costs.t.per_call: required`,
		`providers[0].prices.input: must be an amount between 0 and 1000000000000`,
		`client "k": spend_limit.per_day: must not be more than per_month (10)`,
		`spend_limit.per_week: unknown key`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
}
