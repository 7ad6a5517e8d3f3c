package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestRefusedRequestsCostLittle (issue 21 finding 2): a request refused by
// the rate limit costs one audit record (naming how many calls it held
// and their tools, so GET /audit?tool=X finds it), rate-limited log lines
// and a small answer, on /route/batch, /mcp (a JSON-RPC batch) and /runs.
// REFUSED_BATCHES (default 20) sets how many /route/batch requests of
// 1,024 calls are refused, for measuring.
func TestRefusedRequestsCostLittle(t *testing.T) {
	batches := 20
	if v, err := strconv.Atoi(os.Getenv("REFUSED_BATCHES")); err == nil && v > 0 {
		batches = v
	}
	tools := startTools(t)
	fake := startFakeLLM(t, "openai")
	reg := exampleRegistry(t, tools.addr) + fmt.Sprintf(`
providers:
  - {name: fake, kind: openai, base_url: %s, model: fake-model}
default_provider: fake
clients:
  - {name: hammer, key_env: HAMMER_KEY, tools: ["*"], rate_limit: 1/h, models: ["*"]}
  - {name: auditor, key_env: AUDITOR_KEY, tools: [], admin: true, models: ["*"]}
`, fake.baseURL)
	db := filepath.Join(t.TempDir(), "audit.db")
	rt, _ := startRouter(t, reg, "HAMMER_KEY=hammer-key", "AUDITOR_KEY=auditor-key", "TOOLROUTER_LOG_LEVEL=info", "TOOLROUTER_STORE=sqlite://"+db)
	hammer := []string{"Authorization", "Bearer hammer-key"}
	// The one call of the hour, so that everything after is refused.
	if r := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "p", "tool_call": map[string]any{"name": "test/echo", "arguments": map[string]any{}}}, hammer...); r.Status != 200 {
		t.Fatalf("first call: %d %s", r.Status, r.Body)
	}

	calls := make([]any, 1024)
	for i := range calls {
		name := "test/echo"
		if i%2 == 1 {
			name = "math/add"
		}
		calls[i] = map[string]any{"name": name, "arguments": "{}"}
	}
	body, _ := json.Marshal(map[string]any{"plan_id": "p", "tool_calls": calls})
	answered := 0
	for range batches {
		r := do(t, "POST", rt.URL()+"/route/batch", body, hammer...)
		if r.Status != http.StatusTooManyRequests {
			t.Fatalf("batch: %d %s", r.Status, r.Body)
		}
		answered += len(r.Body)
	}

	// /mcp: a JSON-RPC batch of 1,024 calls on a 2025-03-26 session.
	tok := mcpSession(t, rt.URL(), "2025-03-26", hammer...)
	msgs := make([]string, 1024)
	for i := range msgs {
		msgs[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"test/echo","arguments":{}}}`, i+1)
	}
	r := mcpPost(t, rt.URL(), tok, "["+strings.Join(msgs, ",")+"]", append([]string{"Mcp-Protocol-Version", ""}, hammer...)...)
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("/mcp batch: %d %s", r.Status, r.Body)
	}
	mcpBytes := len(r.Body)

	// /runs: a model turn of 64 calls.
	turn := make([]any, 64)
	for i := range turn {
		turn[i] = toolCall("math/add", map[string]any{"a": i, "b": 1})
	}
	fake.script(t, map[string]any{"tool_calls": turn}, map[string]any{"text": "done"})
	if rr := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "add"}, hammer...); rr.Status != 200 || !strings.Contains(string(rr.Body), "rate limit") {
		t.Fatalf("run: %d %s", rr.Status, rr.Body)
	}

	auditor := []string{"Authorization", "Bearer auditor-key"}
	var rows []map[string]any
	for cursor := ""; ; {
		q := "/audit?client=hammer&outcome=rate_limited&limit=1000" + cursor
		a := do(t, "GET", rt.URL()+q, nil, auditor...)
		var page struct {
			Records    []map[string]any `json:"records"`
			NextCursor string           `json:"next_cursor"`
		}
		if err := json.Unmarshal(a.Body, &page); err != nil || a.Status != 200 {
			t.Fatalf("GET /audit: %d %s", a.Status, a.Body)
		}
		rows = append(rows, page.Records...)
		if page.NextCursor == "" {
			break
		}
		cursor = "&cursor=" + page.NextCursor
	}
	lines := strings.Count(rt.Output(), `"outcome":"rate_limited"`)
	var dbBytes int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(db + suffix); err == nil {
			dbBytes += fi.Size()
		}
	}
	t.Logf("%d refused batches of 1,024 calls (+ an /mcp batch of 1,024, a /runs turn of 64): %d audit records, %d audit log lines, SQLite %d bytes, %d bytes of /route/batch 429 answers; /mcp 429: %d bytes",
		batches, len(rows), lines, dbBytes, answered, mcpBytes)

	if want := batches + 2; len(rows) != want {
		t.Errorf("%d rate_limited records, want %d: one per refused request", len(rows), want)
	}
	if lines > 40 {
		t.Errorf("%d audit log lines for refused requests; want them rate-limited", lines)
	}
	if mcpBytes > 1024 {
		t.Errorf("/mcp 429 answer of %d bytes; want one small error", mcpBytes)
	}
	for _, tool := range []string{"test/echo", "math/add"} {
		a := do(t, "GET", rt.URL()+"/audit?client=hammer&outcome=rate_limited&limit=1000&tool="+tool, nil, auditor...)
		var page struct {
			Records []map[string]any `json:"records"`
		}
		_ = json.Unmarshal(a.Body, &page)
		if len(page.Records) == 0 {
			t.Errorf("GET /audit?tool=%s finds no refused attempt", tool)
		}
	}
	if len(rows) > 0 {
		if rows[len(rows)-1]["calls"] != float64(1024) {
			t.Errorf("the first refused batch's record: %v; want calls 1024", rows[len(rows)-1])
		}
	}
}

// TestRefusedRecordsNameCanonicalTools: the record of a request refused by
// the rate limit names the tools its calls reach by their canonical
// registry names, resolved as the router resolves them (a provider alias,
// a virtual server's exported name), so GET /audit?tool=<canonical> finds
// it; a name that reaches no tool stays as sent. On /route/batch, /route
// and /mcp, plain and virtual (/mcp/{server}).
func TestRefusedRecordsNameCanonicalTools(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	reg := exampleRegistry(t, tools.addr) + `
virtual_servers:
  - name: sv
    tools: ["test/echo"]
    overrides:
      test/echo: {name: ping}
clients:
  - {name: hammer, key_env: HAMMER_KEY, tools: ["*"], rate_limit: 1/h, models: ["*"]}
  - {name: sbot, key_env: SBOT_KEY, virtual_servers: [sv], rate_limit: 1/h, models: ["*"]}
  - {name: auditor, key_env: AUDITOR_KEY, tools: [], admin: true, models: ["*"]}
`
	rt, _ := startRouter(t, reg, "HAMMER_KEY=hammer-key", "SBOT_KEY=sbot-key", "AUDITOR_KEY=auditor-key")
	hammer := []string{"Authorization", "Bearer hammer-key"}
	sbot := []string{"Authorization", "Bearer sbot-key"}
	echo := toolrouter.ExportName(toolrouter.FormatOpenAI, "test/echo") // test_echo_8a21e386
	add := toolrouter.ExportName(toolrouter.FormatOpenAI, "math/add")
	call := func(name string) map[string]any { return map[string]any{"name": name, "arguments": map[string]any{}} }

	// Each client's one call of the hour, so that everything after is refused.
	if r := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "p", "tool_call": call("test/echo")}, hammer...); r.Status != 200 {
		t.Fatalf("hammer's first call: %d %s", r.Status, r.Body)
	}
	if r := do(t, "POST", rt.URL()+"/route?server=sv", map[string]any{"plan_id": "p", "tool_call": call("ping")}, sbot...); r.Status != 200 {
		t.Fatalf("sbot's first call: %d %s", r.Status, r.Body)
	}

	refused := func(what string, r response) {
		t.Helper()
		if r.Status != http.StatusTooManyRequests {
			t.Fatalf("%s: %d %s, want 429", what, r.Status, r.Body)
		}
	}
	refused("/route/batch", do(t, "POST", rt.URL()+"/route/batch", map[string]any{"plan_id": "p",
		"tool_calls": []any{call(echo), call(add), call("no/such_tool")}}, hammer...))
	refused("/route", do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "p", "tool_call": call(echo)}, hammer...))
	refused("/route/batch?server=sv", do(t, "POST", rt.URL()+"/route/batch?server=sv", map[string]any{"plan_id": "p",
		"tool_calls": []any{call("ping")}}, sbot...))
	tok := mcpSession(t, rt.URL(), "2025-11-25", hammer...)
	if r := mcpPost(t, rt.URL(), tok, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+echo+`","arguments":{}}}`, hammer...); r.Status != http.StatusTooManyRequests {
		t.Fatalf("/mcp tools/call: %d %s, want 429", r.Status, r.Body)
	}
	cs := connectMCP(t, rt.URL()+"/mcp/sv", "sbot-key", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ping", Arguments: map[string]any{}}); err == nil {
		t.Fatalf("/mcp/sv tools/call ping: %v, want refused", res)
	}

	auditor := []string{"Authorization", "Bearer auditor-key"}
	records := func(q string) []map[string]any {
		t.Helper()
		a := do(t, "GET", rt.URL()+"/audit?outcome=rate_limited&"+q, nil, auditor...)
		var page struct {
			Records []map[string]any `json:"records"`
		}
		if err := json.Unmarshal(a.Body, &page); err != nil || a.Status != 200 {
			t.Fatalf("GET /audit?%s: %d %s", q, a.Status, a.Body)
		}
		return page.Records
	}
	got := map[string][]string{}
	for _, r := range records("tool=test/echo") {
		key := fmt.Sprint(r["client"], " ", r["entry_point"])
		got[key] = append(got[key], strings.Join(toStrings(r["tools"]), ","))
	}
	want := map[string][]string{
		"hammer route_batch": {"test/echo,math/add,no/such_tool"},
		"hammer route":       {"test/echo"},
		"hammer mcp":         {"test/echo"},
		"sbot route_batch":   {"test/echo"},
		"sbot mcp":           {"test/echo"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("refused records found by GET /audit?tool=test/echo (client entry point: tools): %v, want %v", got, want)
	}
	if n := len(records("tool=math/add")); n != 1 {
		t.Errorf("GET /audit?tool=math/add finds %d refused records, want 1 (the batch)", n)
	}
}
